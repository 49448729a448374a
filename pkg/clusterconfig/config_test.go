package clusterconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
				"cpuAllocationRatio": "4", "vmStateStorageClass": "fast-rwx", "featureGates": "Snapshot,ImageVolume"},
			want: func(c *ClusterConfig) {
				c.UseEmulation, c.LauncherImage, c.MemoryOverhead = true, "reg/launcher:v1", resource.MustParse("256Mi")
				c.CPUAllocationRatio, c.VMStateStorageClass, c.ImageVolumes = 4, "fast-rwx", true
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
		})
	}
}
