//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	cloneclient "github.com/hangarvm/hangar/pkg/generated/clone/clientset/versioned"
)

// TestCloneBootsBesideItsSource: a VirtualMachineClone of a running VM makes a new VM (through
// a snapshot and a restore, which the clone removes when it is done) that boots beside the
// source with its own MAC address and firmware UUID, and keeps the labels the filter keeps.
// virt-controller runs the snapshot, restore and clone controllers only where the cluster
// serves Kubernetes' VolumeSnapshot API, as the local cluster does with its snapshot add-on.
func TestCloneBootsBesideItsSource(t *testing.T) {
	requireVolumeSnapshots(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-clone")
	clones := cloneclient.NewForConfigOrDie(config).CloneV1beta1().VirtualMachineClones(ns)

	spec := guestSpec()
	spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
	spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default", MacAddress: "02:00:00:0a:0b:0c",
		InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}}
	_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "golden", Labels: map[string]string{"app": "web", "owner": "alice"}},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptrTo(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: spec}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	source := waitVMI(t, ns, "golden", 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })

	_, err = clones.Create(ctx, &clonev1beta1.VirtualMachineClone{
		ObjectMeta: metav1.ObjectMeta{Name: "copy"},
		Spec: clonev1beta1.VirtualMachineCloneSpec{
			Source:       &corev1.TypedLocalObjectReference{APIGroup: ptrTo("kubevirt.io"), Kind: "VirtualMachine", Name: "golden"},
			Target:       &corev1.TypedLocalObjectReference{APIGroup: ptrTo("kubevirt.io"), Kind: "VirtualMachine", Name: "golden-copy"},
			LabelFilters: []string{"app"},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var clone *clonev1beta1.VirtualMachineClone
	require.Eventually(t, func() bool {
		clone, err = clones.Get(ctx, "copy", metav1.GetOptions{})
		return err == nil && (clone.Status.Phase == clonev1beta1.Succeeded || clone.Status.Phase == clonev1beta1.Failed)
	}, 3*time.Minute, time.Second, "the clone ends (last: %+v)", clone)
	require.Equal(t, clonev1beta1.Succeeded, clone.Status.Phase, "%+v", clone.Status)

	copyVM, err := hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "golden-copy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"app": "web"}, copyVM.Labels, "the filter keeps app and drops owner")
	copyVMI := waitVMI(t, ns, "golden-copy", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.Phase == v1.Running && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].MAC != ""
	})
	source = waitVMI(t, ns, "golden", 10*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].MAC != ""
	})
	assert.Equal(t, "02:00:00:0a:0b:0c", source.Status.Interfaces[0].MAC)
	assert.NotEqual(t, source.Status.Interfaces[0].MAC, copyVMI.Status.Interfaces[0].MAC, "the clone has a MAC of its own")
	require.NotNil(t, source.Spec.Domain.Firmware)
	require.NotNil(t, copyVMI.Spec.Domain.Firmware)
	assert.NotEmpty(t, copyVMI.Spec.Domain.Firmware.UUID)
	assert.NotEqual(t, source.Spec.Domain.Firmware.UUID, copyVMI.Spec.Domain.Firmware.UUID, "the clone has a firmware UUID of its own")

	// Both guests run side by side and answer on their consoles.
	for _, name := range []string{"golden", "golden-copy"} {
		attach(t, ns, name, "console").typeUntil(t, "echo alive-$((3*7))", "alive-21")
	}
	// The clone's snapshot and restore are gone once it is done.
	require.Eventually(t, func() bool {
		c, err := clones.Get(ctx, "copy", metav1.GetOptions{})
		return err == nil && c.Status.SnapshotName == nil && c.Status.RestoreName == nil
	}, time.Minute, time.Second, "the clone's snapshot and restore are removed")
}
