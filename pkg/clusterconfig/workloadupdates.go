package clusterconfig

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// How running guests move to launchers of a new version after an upgrade, under KubeVirt's
// names (its spec.workloadUpdateStrategy); hangar-operator writes them from the Hangar object.
const (
	// KeyWorkloadUpdateMethods lists the methods, comma-separated: LiveMigrate. Unset, a
	// guest keeps its launcher until it stops.
	KeyWorkloadUpdateMethods = "workloadUpdateMethods"
	// KeyBatchEvictionSize is how many instances start their move per batch.
	KeyBatchEvictionSize = "batchEvictionSize"
	// KeyBatchEvictionInterval is the time between two batches (a Go duration).
	KeyBatchEvictionInterval = "batchEvictionInterval"
)

// WorkloadUpdateLiveMigrate is the method that live-migrates an instance to a new launcher.
const WorkloadUpdateLiveMigrate = "LiveMigrate"

// WorkloadUpdates is the workload update strategy in effect.
type WorkloadUpdates struct {
	// LiveMigrate moves migratable instances by live migration.
	LiveMigrate bool
	// BatchSize instances per BatchInterval at most.
	BatchSize     int
	BatchInterval time.Duration
}

// DefaultWorkloadUpdates is KubeVirt's: no method, batches of 10 a minute.
func DefaultWorkloadUpdates() WorkloadUpdates {
	return WorkloadUpdates{BatchSize: 10, BatchInterval: time.Minute}
}

// parseWorkloadUpdates reads the workload update keys into c.
func parseWorkloadUpdates(data map[string]string, c *ClusterConfig) error {
	w := c.WorkloadUpdates
	if v, ok := data[KeyWorkloadUpdateMethods]; ok {
		w.LiveMigrate = false
		for _, m := range strings.Split(v, ",") {
			switch m = strings.TrimSpace(m); m {
			case "":
			case WorkloadUpdateLiveMigrate:
				w.LiveMigrate = true
			default:
				return fmt.Errorf("%s: %q is not a workload update method (LiveMigrate)", KeyWorkloadUpdateMethods, m)
			}
		}
	}
	if v, ok := data[KeyBatchEvictionSize]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%s: %q is not a positive integer", KeyBatchEvictionSize, v)
		}
		w.BatchSize = n
	}
	if v, ok := data[KeyBatchEvictionInterval]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: %q is not a positive duration", KeyBatchEvictionInterval, v)
		}
		w.BatchInterval = d
	}
	c.WorkloadUpdates = w
	return nil
}
