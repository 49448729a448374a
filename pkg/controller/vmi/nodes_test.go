package vmi

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
)

func node(name string, ready corev1.ConditionStatus, since time.Duration) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(time.Now().Add(-since)),
	}}}}
}

func onNode(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = name
		p.Status.Phase = corev1.PodRunning
	}
}

// deletions are the grace periods of the pod deletions the controller sent (-1: none given).
func deletions(f *fixture) []int64 {
	var out []int64
	for _, a := range f.kube.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.GetResource().Resource == "pods" {
			g := int64(-1)
			if d.DeleteOptions.GracePeriodSeconds != nil {
				g = *d.DeleteOptions.GracePeriodSeconds
			}
			out = append(out, g)
		}
	}
	return out
}

// TestInstancesOnUnresponsiveNodes: an instance whose node has not been Ready for the grace
// period (one minute by default) fails with NodeUnresponsive and its launcher pod is deleted
// at once; within the grace period nothing happens but a check when it ends.
func TestInstancesOnUnresponsiveNodes(t *testing.T) {
	running := func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }
	tests := []struct {
		name        string
		phase       v1.VirtualMachineInstancePhase
		node        *corev1.Node // nil: not in the cache
		wantPhase   v1.VirtualMachineInstancePhase
		wantReason  string
		wantDeletes []int64
		wantRequeue bool
	}{
		{name: "Ready node", phase: v1.Running, node: node("node-a", corev1.ConditionTrue, time.Hour), wantPhase: v1.Running},
		{name: "NotReady within the grace period", phase: v1.Running, node: node("node-a", corev1.ConditionUnknown, 10*time.Second),
			wantPhase: v1.Running, wantRequeue: true},
		{name: "NotReady past the grace period", phase: v1.Running, node: node("node-a", corev1.ConditionUnknown, 2*time.Minute),
			wantPhase: v1.Failed, wantReason: ReasonNodeUnresponsive, wantDeletes: []int64{0}},
		{name: "a Scheduled instance too", phase: v1.Scheduled, node: node("node-a", corev1.ConditionFalse, 2*time.Minute),
			wantPhase: v1.Failed, wantReason: ReasonNodeUnresponsive, wantDeletes: []int64{0}},
		{name: "a Node not in the cache is not judged", phase: v1.Running, node: nil, wantPhase: v1.Running},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := newVMI(tt.phase, running)
			pod := newPod("launcher", vmi.UID, onNode("node-a"))
			f := newFixture(t, []*v1.VirtualMachineInstance{vmi}, []*corev1.Pod{pod})
			if tt.node != nil {
				require.NoError(t, f.nodes.Add(tt.node))
			}
			err := f.c.sync(context.Background(), "ns/vm1")
			var after controllerutil.RequeueAfter
			if tt.wantRequeue {
				require.ErrorAs(t, err, &after)
				assert.InDelta(t, 51*time.Second, time.Duration(after), float64(2*time.Second), "back when the grace period is over")
			} else {
				require.NoError(t, err)
			}
			got := f.vmi("vm1")
			assert.Equal(t, tt.wantPhase, got.Status.Phase)
			assert.Equal(t, tt.wantReason, got.Status.Reason)
			if tt.wantReason != "" {
				assert.Contains(t, f.events(), "Warning NodeUnresponsive node node-a has not been Ready for 1m0s: the instance failed")
				// The failed instance's next sync deletes its pod, with no grace period.
				f.kube.ClearActions()
				require.NoError(t, f.c.vmiIndexer.Update(got))
				f.c.staleVersions.Forget("ns/vm1") // the fake clientset keeps resourceVersions
				require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
			}
			assert.Equal(t, tt.wantDeletes, deletions(f))
		})
	}
}

// TestTerminatingPodOnUnresponsiveNode: a pod deleted gracefully before its node went away
// never ends; it is deleted again, at once, so the instance's finalizer can go.
func TestTerminatingPodOnUnresponsiveNode(t *testing.T) {
	vmi := newVMI(v1.Failed, func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" })
	pod := newPod("launcher", vmi.UID, onNode("node-a"), func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-time.Minute)}
	})
	f := newFixture(t, []*v1.VirtualMachineInstance{vmi}, []*corev1.Pod{pod})

	require.NoError(t, f.nodes.Add(node("node-a", corev1.ConditionTrue, time.Hour)))
	require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
	assert.Empty(t, deletions(f), "a terminating pod on a live node is left to its kubelet")

	require.NoError(t, f.nodes.Update(node("node-a", corev1.ConditionUnknown, 2*time.Minute)))
	require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
	assert.Equal(t, []int64{0}, deletions(f))
}
