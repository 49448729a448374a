// Package metrics holds virt-controller's own Prometheus metrics. They live in component-base's
// legacy registry next to the workqueue, REST client and leader-election metrics, and are all
// served on --metrics-bind-address.
package metrics

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Phase-transition buckets in seconds: KubeVirt's, so that its dashboards' quantiles and
// alerts' thresholds fall on the same bucket bounds.
var phaseBuckets = []float64{0.5, 1, 2, 5, 10, 20, 30, 40, 50, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600}

var (
	// VMIPhaseTransitionFromCreation is KubeVirt's metric of the same name: how long after its
	// creation an instance entered a phase.
	VMIPhaseTransitionFromCreation = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "kubevirt_vmi_phase_transition_time_from_creation_seconds",
		Help:           "Histogram of VM instance phase transitions duration from creation time in seconds.",
		Buckets:        phaseBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"phase"})

	// LauncherPodsCreated counts launcher pod creations by result.
	LauncherPodsCreated = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "hangar_virt_controller_launcher_pods_created_total",
		Help:           "Launcher pods created by virt-controller, by result (success or error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

var registerOnce sync.Once

// Register adds the metrics to the legacy registry; calling it again does nothing.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(VMIPhaseTransitionFromCreation, LauncherPodsCreated)
		registerCollectors()
	})
}

// ObservePhaseTransition records that vmi entered its current phase, if old was in another
// phase. The time is the instance's own record of the transition when it has one.
func ObservePhaseTransition(old, vmi *v1.VirtualMachineInstance) {
	phase := vmi.Status.Phase
	if phase == v1.VmPhaseUnset || (old != nil && old.Status.Phase == phase) {
		return
	}
	at := time.Now()
	for _, ts := range vmi.Status.PhaseTransitionTimestamps {
		if ts.Phase == phase && !ts.PhaseTransitionTimestamp.IsZero() {
			at = ts.PhaseTransitionTimestamp.Time
		}
	}
	d := at.Sub(vmi.CreationTimestamp.Time)
	if d < 0 {
		d = 0 // clocks of different writers
	}
	VMIPhaseTransitionFromCreation.WithLabelValues(string(phase)).Observe(d.Seconds())
}
