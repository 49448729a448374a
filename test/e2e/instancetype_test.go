//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestInstancetypeVMBoots: a VM that names u1.nano and the linux preference, both installed
// by hangar-operator, boots and its console answers; the instance and its launcher pod have
// the instance type's CPU and memory, and a quota on the namespace counts the launcher pod's
// memory, which the template never named.
func TestInstancetypeVMBoots(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-instancetype")
	_, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "memory"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsMemory: resource.MustParse("4Gi")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	spec := guestSpec()
	spec.Domain.Resources = v1.ResourceRequirements{} // the instance type gives the memory
	_, err = hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "nano"},
		Spec: v1.VirtualMachineSpec{
			RunStrategy:  ptr.To(v1.RunStrategyAlways),
			Instancetype: &v1.InstancetypeMatcher{Name: "u1.nano", Kind: "VirtualMachineClusterInstancetype"},
			Preference:   &v1.PreferenceMatcher{Name: "linux"},
			Template:     &v1.VirtualMachineInstanceTemplateSpec{Spec: spec},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	console := attach(t, ns, "nano", "console")
	console.waitFor(t, banner, 90*time.Second)
	console.typeUntil(t, "echo e2e-$((40+2))", "e2e-42")
	vmi := waitVMI(t, ns, "nano", 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	assert.Equal(t, "512Mi", vmi.Spec.Domain.Memory.Guest.String())
	assert.Equal(t, uint32(1), vmi.Spec.Domain.CPU.Sockets*vmi.Spec.Domain.CPU.Cores*vmi.Spec.Domain.CPU.Threads)
	assert.NotNil(t, vmi.Spec.Domain.Devices.Rng, "the linux preference's")

	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	request := pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
	assert.Equal(t, 1, request.Cmp(resource.MustParse("512Mi")), "the pod asks for the guest's memory and its overhead: %s", request.String())

	vm, err := hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "nano", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, vm.Status.InstancetypeRef)
	require.NotNil(t, vm.Status.PreferenceRef)
	_, err = kube.AppsV1().ControllerRevisions(ns).Get(ctx, vm.Status.InstancetypeRef.ControllerRevisionRef.Name, metav1.GetOptions{})
	require.NoError(t, err)

	waitUntil(t, 90*time.Second, "the quota counts the launcher pod's memory", func() bool {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, "memory", metav1.GetOptions{})
		if err != nil {
			return false
		}
		used := q.Status.Used[corev1.ResourceRequestsMemory]
		return used.Cmp(resource.MustParse("512Mi")) > 0
	})
}
