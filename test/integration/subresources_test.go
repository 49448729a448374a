package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func TestVirtualMachineStatusIsSeparateFromSpec(t *testing.T) {
	ctx := context.Background()
	vms := api.Client.KubevirtV1().VirtualMachines("status")
	vm, err := vms.Create(ctx, newVM("vm", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)

	// A status write changes only the status.
	vm.Status.PrintableStatus = v1.VirtualMachineStatusStopped
	vm.Status.StateChangeRequests = []v1.VirtualMachineStateChangeRequest{{Action: v1.StartRequest}}
	vm.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
	vm, err = vms.UpdateStatus(ctx, vm, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.VirtualMachineStatusStopped, vm.Status.PrintableStatus)
	assert.Equal(t, v1.RunStrategyHalted, *vm.Spec.RunStrategy, "status writes ignore the spec")

	// A spec write changes only the spec.
	vm.Status.PrintableStatus = v1.VirtualMachineStatusRunning
	vm.Spec.RunStrategy = ptr.To(v1.RunStrategyManual)
	vm, err = vms.Update(ctx, vm, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.VirtualMachineStatusStopped, vm.Status.PrintableStatus, "spec writes ignore the status")
	assert.Equal(t, v1.RunStrategyManual, *vm.Spec.RunStrategy)

	// Creating with a status drops it.
	withStatus := newVM("born-running", v1.RunStrategyAlways)
	withStatus.Status.Ready = true
	created, err := vms.Create(ctx, withStatus, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.False(t, created.Status.Ready)

	// Status patches go through the subresource too, and are validated.
	_, err = vms.Patch(ctx, "vm", types.MergePatchType, []byte(`{"status":{"stateChangeRequests":[{"action":"Reboot"}]}}`), metav1.PatchOptions{}, "status")
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "got %v", err)
}

func TestVirtualMachineInstanceStatusAndImmutableSpec(t *testing.T) {
	ctx := context.Background()
	vmis := api.Client.KubevirtV1().VirtualMachineInstances("vmi-status")
	vmi, err := vmis.Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	require.NoError(t, err)

	vmi.Status.Phase = v1.Running
	vmi.Status.NodeName = "node-a"
	vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}}
	vmi, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.Running, vmi.Status.Phase)

	changed := vmi.DeepCopy()
	changed.Spec.Domain.CPU.Cores = 8
	_, err = vmis.Update(ctx, changed, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Contains(t, err.Error(), "spec: Forbidden")

	vmi.Labels = map[string]string{"team": "a"}
	vmi, err = vmis.Update(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err, "metadata of an instance may change")

	vmi.Status.Phase = v1.Failed
	vmi, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	vmi.Status.Phase = v1.Running
	_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "a failed instance stays failed, got %v", err)
}

func TestReplicaSetStatusAndScale(t *testing.T) {
	ctx := context.Background()
	sets := api.Client.KubevirtV1().VirtualMachineInstanceReplicaSets("scale")
	rs, err := sets.Create(ctx, newReplicaSet("web", 2), metav1.CreateOptions{})
	require.NoError(t, err)

	rs.Status.Replicas, rs.Status.ReadyReplicas = 2, 1
	rs.Spec.Replicas = ptr.To[int32](9)
	rs, err = sets.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), *rs.Spec.Replicas, "status writes ignore the spec")
	assert.Equal(t, "set=web", rs.Status.LabelSelector, "the selector string is derived from the spec")

	scale, err := sets.GetScale(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), scale.Spec.Replicas)
	assert.Equal(t, int32(2), scale.Status.Replicas)
	assert.Equal(t, "set=web", scale.Status.Selector)
	raw, err := api.Client.KubevirtV1().RESTClient().Get().Namespace("scale").
		Resource("virtualmachineinstancereplicasets").Name("web").SubResource("scale").DoRaw(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"kind":"Scale","apiVersion":"autoscaling/v1"`)

	scale.Spec.Replicas = 5
	scale, err = sets.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(5), scale.Spec.Replicas)
	rs, err = sets.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(5), *rs.Spec.Replicas)
	assert.Equal(t, int64(2), rs.Generation)

	// kubectl scale sends a merge patch to the scale subresource.
	_, err = sets.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}, "scale")
	require.NoError(t, err)
	rs, err = sets.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *rs.Spec.Replicas)

	negative := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: -1}}
	_, err = sets.UpdateScale(ctx, "web", negative, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Contains(t, err.Error(), "spec.replicas")

	stale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", ResourceVersion: scale.ResourceVersion}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
	_, err = sets.UpdateScale(ctx, "web", stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "a scale from a stale resourceVersion must conflict, got %v", err)

	_, err = sets.GetScale(ctx, "missing", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}
