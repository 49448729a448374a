package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/vmi"
)

// TestVMLifecycle: an Always VM gets its instance and launcher pod, follows the pod to a node,
// and after the guest stops gets a new instance only once the old one is gone.
func TestVMLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.startController()
	_, err := e.kv.KubevirtV1().VirtualMachines(e.ns).Create(ctx, newVM("web", v1.RunStrategyAlways), metav1.CreateOptions{})
	require.NoError(t, err)

	var first *v1.VirtualMachineInstance
	e.eventually("a Scheduling instance with one launcher pod", func() (bool, error) {
		vmi, err := e.vmi("web")
		if err != nil {
			return false, err
		}
		first = vmi
		return vmi.Status.Phase == v1.Scheduling && len(e.launcherPods()[string(vmi.UID)]) == 1, nil
	})
	ref := metav1.GetControllerOf(first)
	require.NotNil(t, ref)
	assert.Equal(t, e.vm("web").UID, ref.UID)
	assert.Contains(t, first.Finalizers, vmi.Finalizer)
	e.eventually("printableStatus Starting", func() (bool, error) {
		return e.vm("web").Status.PrintableStatus == v1.VirtualMachineStatusStarting, nil
	})

	pod := e.launcherPods()[string(first.UID)][0]
	assert.Equal(t, "virt-launcher-web-", pod.GenerateName)
	e.bindPod(pod, "node-a")
	e.eventually("Scheduled on node-a", func() (bool, error) {
		vmi, err := e.vmi("web")
		return err == nil && vmi.Status.Phase == v1.Scheduled && vmi.Status.NodeName == "node-a", err
	})

	e.setPhase("web", v1.Running)
	e.eventually("printableStatus Running", func() (bool, error) { return e.vm("web").Status.PrintableStatus == v1.VirtualMachineStatusRunning, nil })

	e.setPhase("web", v1.Succeeded)
	e.eventually("a new instance", func() (bool, error) {
		vmi, err := e.vmi("web")
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && vmi.UID != first.UID, err
	})
	pods := e.launcherPods()
	assert.Empty(t, pods[string(first.UID)], "the old launcher pod was deleted before the instance went away")
	s := e.vm("web").Status
	assert.Nil(t, s.StartFailure, "the guest had run")
	assert.True(t, s.Created)
}

// TestManualStartStop drives a Manual VM with state change requests, as the start and stop
// subresources would write them.
func TestManualStartStop(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.startController()
	_, err := e.kv.KubevirtV1().VirtualMachines(e.ns).Create(ctx, newVM("man", v1.RunStrategyManual), metav1.CreateOptions{})
	require.NoError(t, err)
	e.eventually("Stopped", func() (bool, error) { return e.vm("man").Status.PrintableStatus == v1.VirtualMachineStatusStopped, nil })

	request := func(r ...v1.VirtualMachineStateChangeRequest) {
		e.eventually("the request to be written", func() (bool, error) {
			vm := e.vm("man")
			vm.Status.StateChangeRequests = r
			_, err := e.kv.KubevirtV1().VirtualMachines(e.ns).UpdateStatus(ctx, vm, metav1.UpdateOptions{})
			return err == nil, err
		})
	}
	request(v1.VirtualMachineStateChangeRequest{Action: v1.StartRequest})
	var started *v1.VirtualMachineInstance
	e.eventually("started, request consumed", func() (bool, error) {
		vmi, err := e.vmi("man")
		if err != nil {
			return false, nil
		}
		started = vmi
		return len(e.vm("man").Status.StateChangeRequests) == 0, nil
	})

	request(v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest, UID: ptr.To(started.UID)})
	e.eventually("stopped, request consumed", func() (bool, error) {
		_, err := e.vmi("man")
		vm := e.vm("man")
		return apierrors.IsNotFound(err) && len(vm.Status.StateChangeRequests) == 0 &&
			vm.Status.PrintableStatus == v1.VirtualMachineStatusStopped, nil
	})
}

// TestRestartLosesNothing: the controller is stopped while it creates instances and pods, and
// a new one finishes the work without duplicating anything.
func TestRestartLosesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 40
	for i := range n {
		_, err := e.kv.KubevirtV1().VirtualMachines(e.ns).Create(ctx, newVM(fmt.Sprintf("vm-%02d", i), v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	stop := e.startController()
	e.eventually("some instances", func() (bool, error) {
		l, err := e.kv.KubevirtV1().VirtualMachineInstances(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) >= n/4, err
	})
	stop()
	e.startController()
	e.eventually("every VM with one Scheduling instance and one pod", func() (bool, error) {
		l, err := e.kv.KubevirtV1().VirtualMachineInstances(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != n {
			return false, err
		}
		pods := e.launcherPods()
		for _, vmi := range l.Items {
			if vmi.Status.Phase != v1.Scheduling || len(pods[string(vmi.UID)]) != 1 {
				return false, nil
			}
		}
		return len(pods) == n, nil
	})
	creates := 0
	for _, a := range e.kube.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			creates++
		}
	}
	assert.Equal(t, n, creates, "no pod was created twice")
}

// TestReplicaSetScale scales a replica set through the scale subresource.
func TestReplicaSetScale(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.startController()
	labels := map[string]string{"set": "pool"}
	rs := &v1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "pool"},
		Spec: v1.VirtualMachineInstanceReplicaSetSpec{Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: guest()}},
	}
	_, err := e.kv.KubevirtV1().VirtualMachineInstanceReplicaSets(e.ns).Create(ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)

	count := func(want int32) {
		e.eventually(fmt.Sprintf("%d replicas", want), func() (bool, error) {
			l, err := e.kv.KubevirtV1().VirtualMachineInstances(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "set=pool"})
			if err != nil {
				return false, err
			}
			rs, err := e.kv.KubevirtV1().VirtualMachineInstanceReplicaSets(e.ns).Get(ctx, "pool", metav1.GetOptions{})
			return err == nil && len(l.Items) == int(want) && rs.Status.Replicas == want, err
		})
	}
	count(3)
	scale := func(n int32) {
		_, err := e.kv.KubevirtV1().VirtualMachineInstanceReplicaSets(e.ns).UpdateScale(ctx, "pool",
			&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: e.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	scale(5)
	count(5)
	scale(1)
	count(1)
	sc, err := e.kv.KubevirtV1().VirtualMachineInstanceReplicaSets(e.ns).GetScale(ctx, "pool", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), sc.Status.Replicas)
	assert.Equal(t, "set=pool", sc.Status.Selector)

	l, err := e.kv.KubevirtV1().VirtualMachineInstances(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "set=pool"})
	require.NoError(t, err)
	require.Len(t, l.Items, 1)
	assert.Regexp(t, "^pool[a-z0-9]{5}$", l.Items[0].Name)

	// An orphan with the set's labels is adopted; the set then has one too many and deletes one.
	orphan := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "stray", Labels: labels}, Spec: guest()}
	_, err = e.kv.KubevirtV1().VirtualMachineInstances(e.ns).Create(ctx, orphan, metav1.CreateOptions{})
	require.NoError(t, err)
	count(1)
}
