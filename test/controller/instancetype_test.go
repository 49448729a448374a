//go:build kube

package controller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
)

// vmNaming is a VM whose template gives no CPU or memory: its instance type does.
func vmNaming(name, instancetype string) *v1.VirtualMachine {
	vm := newVM(name, v1.RunStrategyAlways)
	vm.Spec.Template.Spec.Domain.Resources = v1.ResourceRequirements{}
	vm.Spec.Instancetype = &v1.InstancetypeMatcher{Name: instancetype}
	return vm
}

// TestInstancetypeRevisions: a VM that names an instance type starts with its CPU and memory
// (the instance and its launcher pod), keeps the revision it first used, and does not change
// when the instance type is edited; a VM created after the edit gets the new version.
func TestInstancetypeRevisions(t *testing.T) {
	c := startCluster(t)
	c.startController()
	ctx := context.Background()
	ns := c.namespace("instancetypes")
	admin, err := instancetypeclient.NewForConfig(c.Admin)
	require.NoError(t, err)
	its := admin.InstancetypeV1beta1().VirtualMachineClusterInstancetypes()
	_, err = its.Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "ctl.small"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 2},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("1Gi")},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, vmNaming("first", "ctl.small"), metav1.CreateOptions{})
	require.NoError(t, err)
	var vmi *v1.VirtualMachineInstance
	var pod corev1.Pod
	waitFor(t, wait, "the instance and its launcher pod", func() (bool, error) {
		got, err := c.vmi(ns, "first")
		if err != nil {
			return false, nil
		}
		pods := c.launcherPods(ns)[string(got.UID)]
		if len(pods) != 1 {
			return false, nil
		}
		vmi, pod = got, pods[0]
		return true, nil
	})
	assert.Equal(t, "1Gi", vmi.Spec.Domain.Memory.Guest.String(), "the instance type's memory")
	assert.Equal(t, uint32(2), vmi.Spec.Domain.CPU.Sockets, "the instance type's vCPUs, as sockets by default")
	memory := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
	assert.Equal(t, 1, memory.Cmp(resource.MustParse("1Gi")), "the launcher pod asks for the guest's memory and its overhead, got %s", memory.String())

	vm := c.vm(ns, "first")
	require.NotNil(t, vm.Status.InstancetypeRef)
	require.NotNil(t, vm.Status.InstancetypeRef.ControllerRevisionRef)
	revisionName := vm.Status.InstancetypeRef.ControllerRevisionRef.Name
	revision, err := c.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, revisionName, metav1.GetOptions{})
	require.NoError(t, err, "the revision is a ControllerRevision of the VM's namespace")
	assert.Equal(t, vm.UID, metav1.GetControllerOf(revision).UID)

	// The instance type grows; the VM keeps its revision.
	it, err := its.Get(ctx, "ctl.small", metav1.GetOptions{})
	require.NoError(t, err)
	it.Spec.Memory.Guest = resource.MustParse("2Gi")
	_, err = its.Update(ctx, it, metav1.UpdateOptions{})
	require.NoError(t, err)
	raw, err := c.Hangar.KubevirtV1().RESTClient().Get().Namespace(ns).Resource("virtualmachines").Name("first").
		SubResource("expand-spec").SetHeader("Accept", "application/json").DoRaw(ctx)
	require.NoError(t, err, string(raw))
	var expanded v1.VirtualMachine
	require.NoError(t, json.Unmarshal(raw, &expanded))
	assert.Equal(t, "1Gi", expanded.Spec.Template.Spec.Domain.Memory.Guest.String(), "expanded with its revision, not the edited object")

	_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, vmNaming("second", "ctl.small"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, wait, "the second instance", func() (bool, error) {
		got, err := c.vmi(ns, "second")
		if err != nil {
			return false, nil
		}
		vmi = got
		return true, nil
	})
	assert.Equal(t, "2Gi", vmi.Spec.Domain.Memory.Guest.String(), "a new VM gets the current version")
	second := c.vm(ns, "second")
	assert.NotEqual(t, revisionName, second.Status.InstancetypeRef.ControllerRevisionRef.Name)

	// Pinning the first VM's revision by name keeps it; the running instance is untouched.
	first := c.vm(ns, "first")
	first.Spec.Instancetype.RevisionName = revisionName
	_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Update(ctx, first, metav1.UpdateOptions{})
	require.NoError(t, err)
}
