package config

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
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
				"cpuAllocationRatio": "4"},
			want: func(c *ClusterConfig) {
				c.UseEmulation, c.LauncherImage, c.MemoryOverhead = true, "reg/launcher:v1", resource.MustParse("256Mi")
				c.CPUAllocationRatio = 4
			},
		},
		{
			name:    "bad values keep the base and are reported",
			data:    map[string]string{"useEmulation": "yes please", "memoryOverhead": "lots", "cpuAllocationRatio": "0"},
			want:    func(*ClusterConfig) {},
			wantErr: 3,
		},
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
		})
	}
}

// TestWatch checks that the store follows the ConfigMap: created, changed, deleted.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewSimpleClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "hangar", Name: "hangar-config"},
		Data:       map[string]string{"useEmulation": "true"},
	}, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "hangar", Name: "other"},
		Data:       map[string]string{"launcherImage": "wrong"},
	})
	s := NewStore(Defaults())
	require.NoError(t, s.Watch(ctx, client, "hangar", "hangar-config"))
	assert.True(t, s.Get().UseEmulation)
	assert.Equal(t, DefaultLauncherImage, s.Get().LauncherImage)

	cms := client.CoreV1().ConfigMaps("hangar")
	_, err := cms.Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "hangar", Name: "hangar-config"},
		Data:       map[string]string{"useEmulation": "false", "launcherImage": "reg/l:2"},
	}, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return s.Get().LauncherImage == "reg/l:2" && !s.Get().UseEmulation }, 5*time.Second, 10*time.Millisecond)

	require.NoError(t, cms.Delete(ctx, "hangar-config", metav1.DeleteOptions{}))
	assert.Eventually(t, func() bool { return s.Get().LauncherImage == DefaultLauncherImage }, 5*time.Second, 10*time.Millisecond)
}
