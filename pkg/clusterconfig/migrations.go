package clusterconfig

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Migration and drain settings, under KubeVirt's names.
const (
	// KeyEvictionStrategy is the eviction strategy of instances that set none (None,
	// LiveMigrate, LiveMigrateIfPossible or External; KubeVirt's spec.configuration
	// .evictionStrategy). Unset, an instance without a strategy is simply evicted.
	KeyEvictionStrategy = "evictionStrategy"
	// KeyMigrations holds KubeVirt's migrations block as YAML or JSON, for example
	// "parallelMigrationsPerCluster: 5\nprogressTimeout: 150". Fields left out keep their
	// defaults; an unknown field or a bad value rejects the whole block.
	KeyMigrations = "migrations"
)

var evictionStrategies = map[v1.EvictionStrategy]bool{
	v1.EvictionStrategyNone: true, v1.EvictionStrategyLiveMigrate: true,
	v1.EvictionStrategyLiveMigrateIfPossible: true, v1.EvictionStrategyExternal: true,
}

// DefaultMigrations is KubeVirt's default migrations block: 5 migrations in the cluster and 2
// out of one node at a time, no bandwidth limit, 150 s per GiB of guest memory to complete and
// 150 s without progress before a migration is aborted, no auto-converge, no post-copy.
func DefaultMigrations() v1.MigrationConfiguration {
	return v1.MigrationConfiguration{
		ParallelMigrationsPerCluster:      ptr.To[uint32](5),
		ParallelOutboundMigrationsPerNode: ptr.To[uint32](2),
		BandwidthPerMigration:             ptr.To(resource.MustParse("0Mi")),
		CompletionTimeoutPerGiB:           ptr.To[int64](150),
		ProgressTimeout:                   ptr.To[int64](150),
		AllowAutoConverge:                 ptr.To(false),
		AllowPostCopy:                     ptr.To(false),
	}
}

// parseEvictionStrategy reads KeyEvictionStrategy into c.
func parseEvictionStrategy(data map[string]string, c *ClusterConfig) error {
	v, ok := data[KeyEvictionStrategy]
	if !ok {
		return nil
	}
	if !evictionStrategies[v1.EvictionStrategy(v)] {
		return fmt.Errorf("%s: %q is not one of None, LiveMigrate, LiveMigrateIfPossible, External", KeyEvictionStrategy, v)
	}
	c.EvictionStrategy = v1.EvictionStrategy(v)
	return nil
}

// parseMigrations reads KeyMigrations over c's migrations block.
func parseMigrations(data map[string]string, c *ClusterConfig) error {
	v, ok := data[KeyMigrations]
	if !ok {
		return nil
	}
	var m v1.MigrationConfiguration
	if err := yaml.UnmarshalStrict([]byte(v), &m); err != nil {
		return fmt.Errorf("%s: %w", KeyMigrations, err)
	}
	if err := validateMigrations(&m); err != nil {
		return fmt.Errorf("%s: %w", KeyMigrations, err)
	}
	merged := c.Migrations
	if m.ParallelMigrationsPerCluster != nil {
		merged.ParallelMigrationsPerCluster = m.ParallelMigrationsPerCluster
	}
	if m.ParallelOutboundMigrationsPerNode != nil {
		merged.ParallelOutboundMigrationsPerNode = m.ParallelOutboundMigrationsPerNode
	}
	if m.BandwidthPerMigration != nil {
		merged.BandwidthPerMigration = m.BandwidthPerMigration
	}
	if m.CompletionTimeoutPerGiB != nil {
		merged.CompletionTimeoutPerGiB = m.CompletionTimeoutPerGiB
	}
	if m.ProgressTimeout != nil {
		merged.ProgressTimeout = m.ProgressTimeout
	}
	if m.AllowAutoConverge != nil {
		merged.AllowAutoConverge = m.AllowAutoConverge
	}
	if m.AllowPostCopy != nil {
		merged.AllowPostCopy = m.AllowPostCopy
	}
	c.Migrations = merged
	return nil
}

func validateMigrations(m *v1.MigrationConfiguration) error {
	if p := m.ParallelMigrationsPerCluster; p != nil && *p < 1 {
		return fmt.Errorf("parallelMigrationsPerCluster must be at least 1")
	}
	if p := m.ParallelOutboundMigrationsPerNode; p != nil && *p < 1 {
		return fmt.Errorf("parallelOutboundMigrationsPerNode must be at least 1")
	}
	if b := m.BandwidthPerMigration; b != nil && b.Sign() < 0 {
		return fmt.Errorf("bandwidthPerMigration must not be negative")
	}
	if t := m.CompletionTimeoutPerGiB; t != nil && *t < 1 {
		return fmt.Errorf("completionTimeoutPerGiB must be at least 1 (seconds)")
	}
	if t := m.ProgressTimeout; t != nil && *t < 1 {
		return fmt.Errorf("progressTimeout must be at least 1 (seconds)")
	}
	return nil
}
