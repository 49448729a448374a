package virtctl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
)

// TestHotplugSource: as KubeVirt's virtctl, a DataVolume of the name wins, then the claim.
func TestHotplugSource(t *testing.T) {
	dv := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume",
		"metadata": map[string]any{"name": "dv1", "namespace": "ns"}}}
	c := &cliContext{flags: genericclioptions.NewConfigFlags(true),
		kubernetes: k8sfake.NewSimpleClientset(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pvc1", Namespace: "ns"}}),
		dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{dataVolumesGVR: "DataVolumeList"}, dv)}
	c.flags.Namespace = ptrTo("ns")
	ctx := context.Background()

	src, err := c.hotplugSource(ctx, "ns", "dv1")
	require.NoError(t, err)
	require.NotNil(t, src.DataVolume)
	assert.Equal(t, "dv1", src.DataVolume.Name)
	assert.True(t, src.DataVolume.Hotpluggable)

	src, err = c.hotplugSource(ctx, "ns", "pvc1")
	require.NoError(t, err)
	require.NotNil(t, src.PersistentVolumeClaim)
	assert.Equal(t, "pvc1", src.PersistentVolumeClaim.ClaimName)

	_, err = c.hotplugSource(ctx, "ns", "nothing")
	assert.EqualError(t, err, "volume nothing is not a DataVolume or PersistentVolumeClaim")
}

func ptrTo(s string) *string { return &s }
