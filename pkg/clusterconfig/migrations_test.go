package clusterconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func TestParseMigrationSettings(t *testing.T) {
	tests := []struct {
		name     string
		data     map[string]string
		want     func(*ClusterConfig)
		wantErrs int
	}{
		{name: "defaults are KubeVirt's", want: func(*ClusterConfig) {}},
		{name: "eviction strategy", data: map[string]string{"evictionStrategy": "LiveMigrate"},
			want: func(c *ClusterConfig) { c.EvictionStrategy = v1.EvictionStrategyLiveMigrate }},
		{name: "unknown eviction strategy", data: map[string]string{"evictionStrategy": "Teleport"}, want: func(*ClusterConfig) {}, wantErrs: 1},
		{name: "part of the block keeps the other defaults", data: map[string]string{"migrations": "parallelMigrationsPerCluster: 10\nallowPostCopy: true\nbandwidthPerMigration: 64Mi"},
			want: func(c *ClusterConfig) {
				c.Migrations.ParallelMigrationsPerCluster = ptr.To[uint32](10)
				c.Migrations.AllowPostCopy = ptr.To(true)
				c.Migrations.BandwidthPerMigration = ptr.To(resource.MustParse("64Mi"))
			}},
		{name: "JSON too", data: map[string]string{"migrations": `{"progressTimeout": 30, "completionTimeoutPerGiB": 60}`},
			want: func(c *ClusterConfig) {
				c.Migrations.ProgressTimeout = ptr.To[int64](30)
				c.Migrations.CompletionTimeoutPerGiB = ptr.To[int64](60)
			}},
		{name: "unknown field rejects the block", data: map[string]string{"migrations": "parallelMigrationsPerCluster: 10\nunsafeMigrationOverride: true"},
			want: func(*ClusterConfig) {}, wantErrs: 1},
		{name: "zero parallel migrations", data: map[string]string{"migrations": "parallelOutboundMigrationsPerNode: 0"}, want: func(*ClusterConfig) {}, wantErrs: 1},
		{name: "negative bandwidth", data: map[string]string{"migrations": "bandwidthPerMigration: -1Mi"}, want: func(*ClusterConfig) {}, wantErrs: 1},
		{name: "zero progress timeout", data: map[string]string{"migrations": "progressTimeout: 0"}, want: func(*ClusterConfig) {}, wantErrs: 1},
		{name: "not YAML", data: map[string]string{"migrations": "{{"}, want: func(*ClusterConfig) {}, wantErrs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Defaults()
			tt.want(&want)
			got, errs := Parse(tt.data, Defaults())
			assert.Len(t, errs, tt.wantErrs, "%v", errs)
			assert.Equal(t, want.EvictionStrategy, got.EvictionStrategy)
			assert.Equal(t, *want.Migrations.ParallelMigrationsPerCluster, *got.Migrations.ParallelMigrationsPerCluster)
			assert.Equal(t, *want.Migrations.ParallelOutboundMigrationsPerNode, *got.Migrations.ParallelOutboundMigrationsPerNode)
			assert.Equal(t, 0, want.Migrations.BandwidthPerMigration.Cmp(*got.Migrations.BandwidthPerMigration))
			assert.Equal(t, *want.Migrations.CompletionTimeoutPerGiB, *got.Migrations.CompletionTimeoutPerGiB)
			assert.Equal(t, *want.Migrations.ProgressTimeout, *got.Migrations.ProgressTimeout)
			assert.Equal(t, *want.Migrations.AllowAutoConverge, *got.Migrations.AllowAutoConverge)
			assert.Equal(t, *want.Migrations.AllowPostCopy, *got.Migrations.AllowPostCopy)
		})
	}
	d := DefaultMigrations()
	assert.Equal(t, uint32(5), *d.ParallelMigrationsPerCluster)
	assert.Equal(t, uint32(2), *d.ParallelOutboundMigrationsPerNode)
	assert.Equal(t, int64(150), *d.CompletionTimeoutPerGiB)
	assert.Equal(t, int64(150), *d.ProgressTimeout)
}
