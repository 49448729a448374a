package controllerutil

import (
	"time"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Back-off after a failed migration that a controller started: doubled per failure, capped.
const (
	baseBackoff = 10 * time.Second
	maxBackoff  = 5 * time.Minute
)

// MigrationFailedAt is when a migration failed: its Failed transition, else its creation.
func MigrationFailedAt(m *v1.VirtualMachineInstanceMigration) time.Time {
	for _, ts := range m.Status.PhaseTransitionTimestamps {
		if ts.Phase == v1.MigrationFailed {
			return ts.PhaseTransitionTimestamp.Time
		}
	}
	return m.CreationTimestamp.Time
}

// MigrationBackoff is how long an instance with these failed migrations (of one kind: an
// evacuation's, a workload update's) waits before the next: doubled per failure from 10 s,
// at most 5 minutes.
func MigrationBackoff(failed []time.Time, now time.Time) time.Duration {
	if len(failed) == 0 {
		return 0
	}
	last := failed[0]
	for _, t := range failed[1:] {
		if t.After(last) {
			last = t
		}
	}
	backoff := baseBackoff
	for i := 1; i < len(failed) && backoff < maxBackoff; i++ {
		backoff *= 2
	}
	return max(0, min(backoff, maxBackoff)-now.Sub(last))
}
