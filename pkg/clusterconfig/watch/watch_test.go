package watch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hangarvm/hangar/pkg/clusterconfig"
)

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
	s := clusterconfig.NewStore(clusterconfig.Defaults())
	require.NoError(t, Watch(ctx, s, client, "hangar", "hangar-config"))
	assert.True(t, s.Get().UseEmulation)
	assert.Equal(t, clusterconfig.DefaultLauncherImage, s.Get().LauncherImage)

	cms := client.CoreV1().ConfigMaps("hangar")
	_, err := cms.Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "hangar", Name: "hangar-config"},
		Data:       map[string]string{"useEmulation": "false", "launcherImage": "reg/l:2"},
	}, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return s.Get().LauncherImage == "reg/l:2" && !s.Get().UseEmulation }, 5*time.Second, 10*time.Millisecond)

	require.NoError(t, cms.Delete(ctx, "hangar-config", metav1.DeleteOptions{}))
	assert.Eventually(t, func() bool { return s.Get().LauncherImage == clusterconfig.DefaultLauncherImage }, 5*time.Second, 10*time.Millisecond)
}
