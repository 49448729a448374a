package clusterconfig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string]string
		want    func(*ClusterConfig)
		wantErr int
	}{
		{name: "empty keeps defaults", want: func(*ClusterConfig) {}},
		{
			name: "every key",
			data: map[string]string{"useEmulation": "true", "launcherImage": "reg/launcher:v1", "memoryOverhead": "256Mi",
				"cpuAllocationRatio": "4", "vmStateStorageClass": "fast-rwx", "featureGates": "Snapshot,ImageVolume",
				"launcherDevicesOnly": "true"},
			want: func(c *ClusterConfig) {
				c.UseEmulation, c.LauncherImage, c.MemoryOverhead = true, "reg/launcher:v1", resource.MustParse("256Mi")
				c.CPUAllocationRatio, c.VMStateStorageClass, c.ImageVolumes = 4, "fast-rwx", true
				c.LauncherDevicesOnly = true
			},
		},
		{name: "gates without ImageVolume", data: map[string]string{"featureGates": "Snapshot, ImageVolumes"}, want: func(*ClusterConfig) {}},
		{name: "a gate among spaces", data: map[string]string{"featureGates": " ImageVolume "}, want: func(c *ClusterConfig) { c.ImageVolumes = true }},
		{
			name:    "bad values keep the base and are reported",
			data:    map[string]string{"useEmulation": "yes please", "memoryOverhead": "lots", "cpuAllocationRatio": "0"},
			want:    func(*ClusterConfig) {},
			wantErr: 3,
		},
		{name: "a StorageClass name that cannot be one", data: map[string]string{"vmStateStorageClass": "Fast_RWX"}, want: func(*ClusterConfig) {}, wantErr: 1},
		{name: "negative overhead", data: map[string]string{"memoryOverhead": "-1Mi"}, want: func(*ClusterConfig) {}, wantErr: 1},
		// The admission policy compares the very string with "true": nothing else is taken.
		{name: "launcher devices in another spelling", data: map[string]string{"launcherDevicesOnly": "True"}, want: func(*ClusterConfig) {}, wantErr: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Defaults()
			tt.want(&want)
			got, errs := Parse(tt.data, Defaults())
			assert.Len(t, errs, tt.wantErr)
			assert.Equal(t, want.UseEmulation, got.UseEmulation)
			assert.Equal(t, want.LauncherImage, got.LauncherImage)
			assert.Equal(t, 0, want.MemoryOverhead.Cmp(got.MemoryOverhead), "overhead %s", got.MemoryOverhead.String())
			assert.Equal(t, want.CPUAllocationRatio, got.CPUAllocationRatio)
			assert.Equal(t, want.VMStateStorageClass, got.VMStateStorageClass)
			assert.Equal(t, want.ImageVolumes, got.ImageVolumes)
			assert.Equal(t, want.LauncherDevicesOnly, got.LauncherDevicesOnly)
		})
	}
}

func TestParseWorkloadUpdates(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want WorkloadUpdates
		err  string
	}{
		{name: "unset", want: DefaultWorkloadUpdates()},
		{name: "live migration in batches", data: map[string]string{KeyWorkloadUpdateMethods: "LiveMigrate", KeyBatchEvictionSize: "3",
			KeyBatchEvictionInterval: "30s"}, want: WorkloadUpdates{LiveMigrate: true, BatchSize: 3, BatchInterval: 30 * time.Second}},
		{name: "no method", data: map[string]string{KeyWorkloadUpdateMethods: ""}, want: DefaultWorkloadUpdates()},
		{name: "an unknown method", data: map[string]string{KeyWorkloadUpdateMethods: "LiveMigrate,Teleport"}, want: DefaultWorkloadUpdates(),
			err: `"Teleport" is not a workload update method`},
		{name: "no batch", data: map[string]string{KeyBatchEvictionSize: "0"}, want: DefaultWorkloadUpdates(), err: "not a positive integer"},
		{name: "a bad interval", data: map[string]string{KeyBatchEvictionInterval: "soon"}, want: DefaultWorkloadUpdates(), err: "not a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, errs := Parse(tt.data, Defaults())
			assert.Equal(t, tt.want, c.WorkloadUpdates)
			if tt.err == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.ErrorContains(t, errs[0], tt.err)
		})
	}
}
