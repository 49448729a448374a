package integration

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

var (
	vmsV1       = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmsV1alpha3 = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1alpha3", Resource: "virtualmachines"}
)

func TestV1alpha3RoundTrip(t *testing.T) {
	ctx := context.Background()
	client, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	ns := "versions"

	// Written as v1, read as v1alpha3, written back as v1alpha3, read as v1.
	created, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("bilingual", v1.RunStrategyManual), metav1.CreateOptions{})
	require.NoError(t, err)
	old, err := client.Resource(vmsV1alpha3).Namespace(ns).Get(ctx, "bilingual", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "kubevirt.io/v1alpha3", old.GetAPIVersion())
	strategy, _, _ := unstructured.NestedString(old.Object, "spec", "runStrategy")
	assert.Equal(t, "Manual", strategy)

	require.NoError(t, unstructured.SetNestedField(old.Object, "Always", "spec", "runStrategy"))
	_, err = client.Resource(vmsV1alpha3).Namespace(ns).Update(ctx, old, metav1.UpdateOptions{})
	require.NoError(t, err)
	back, err := api.Client.KubevirtV1().VirtualMachines(ns).Get(ctx, "bilingual", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.RunStrategyAlways, *back.Spec.RunStrategy)
	assert.Equal(t, created.UID, back.UID)
	assert.Equal(t, created.Spec.Template, back.Spec.Template, "the template survives the trip through v1alpha3")
}

// TestUserGuideVirtualMachine applies the VirtualMachine of KubeVirt's user guide unchanged,
// as v1 and as v1alpha3.
func TestUserGuideVirtualMachine(t *testing.T) {
	ctx := context.Background()
	client, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	manifest, err := os.ReadFile("testdata/vm-cirros.yaml")
	require.NoError(t, err)

	for _, gvr := range []schema.GroupVersionResource{vmsV1, vmsV1alpha3} {
		t.Run(gvr.Version, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(manifest, &obj.Object))
			obj.SetAPIVersion(gvr.GroupVersion().String())
			created, err := client.Resource(gvr).Namespace("guide-"+gvr.Version).Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
			require.NoError(t, err)
			running, found, _ := unstructured.NestedBool(created.Object, "spec", "running")
			assert.True(t, found)
			assert.False(t, running)

			vm, err := api.Client.KubevirtV1().VirtualMachines("guide-"+gvr.Version).Get(ctx, "vm-cirros", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, v1.RunStrategyHalted, vm.Spec.EffectiveRunStrategy())
			volumes := vm.Spec.Template.Spec.Volumes
			require.Len(t, volumes, 2)
			assert.Equal(t, "kubevirt/cirros-container-disk-demo:latest", volumes[0].ContainerDisk.Image)
			assert.NotEmpty(t, volumes[1].CloudInitNoCloud.UserDataBase64)
			assert.Equal(t, "64M", vm.Spec.Template.Spec.Domain.Memory.Guest.String())
		})
	}
}
