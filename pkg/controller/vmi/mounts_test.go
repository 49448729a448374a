package vmi

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	k8stesting "k8s.io/client-go/testing"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
)

const missingSecret = `MountVolume.SetUp failed for volume "hangar-secret-0" : secret "seed" not found`

var eventSerial atomic.Int64

// failedMount is the kubelet's event about a pod whose volume it cannot mount.
func failedMount(pod string, uid types.UID, message string, ago time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s.%d", pod, eventSerial.Add(1))},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: pod, UID: uid},
		Reason:         FailedMountReason, Type: corev1.EventTypeWarning, Message: message,
		LastTimestamp: metav1.NewTime(time.Now().Add(-ago)),
	}
}

func scheduled(v *v1.VirtualMachineInstance) {
	v.Status.NodeName = "node-a"
}

// TestMountFailure: an instance whose launcher pod waits for a volume the kubelet cannot mount
// (a cloud-init Secret that does not exist) says so in its Synchronized condition, with the
// kubelet's latest message for this pod, and an event; the condition goes when the pod runs.
func TestMountFailure(t *testing.T) {
	pending := newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodPending))
	tests := []struct {
		name       string
		vmi        *v1.VirtualMachineInstance
		pod        *corev1.Pod
		events     []*corev1.Event
		wantReason string // of the Synchronized condition; "" for none
		wantMsg    string
		wantEvents []string
	}{
		{
			name:       "a missing Secret: not synchronized, with the kubelet's message",
			vmi:        newVMI(v1.Scheduled, scheduled),
			pod:        pending,
			events:     []*corev1.Event{failedMount("p1", pending.UID, missingSecret, time.Minute)},
			wantReason: FailedMountReason, wantMsg: missingSecret,
			wantEvents: []string{"Warning FailedMount " + missingSecret},
		},
		{
			name: "the latest of the pod's events",
			vmi:  newVMI(v1.Scheduled, scheduled),
			pod:  pending,
			events: []*corev1.Event{
				failedMount("p1", pending.UID, "MountVolume.SetUp failed: an older failure", time.Minute),
				failedMount("p1", pending.UID, missingSecret, time.Second),
			},
			wantReason: FailedMountReason, wantMsg: missingSecret,
			wantEvents: []string{"Warning FailedMount " + missingSecret},
		},
		{
			name:   "an event of an earlier pod of the same name says nothing",
			vmi:    newVMI(v1.Scheduled, scheduled),
			pod:    pending,
			events: []*corev1.Event{failedMount("p1", "an-earlier-pod", missingSecret, time.Minute)},
		},
		{
			name: "reported already: no second event",
			vmi: newVMI(v1.Scheduled, scheduled, func(v *v1.VirtualMachineInstance) {
				v.Status.Conditions = []v1.VirtualMachineInstanceCondition{
					{Type: v1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: FailedMountReason, Message: missingSecret},
				}
			}),
			pod:        pending,
			events:     []*corev1.Event{failedMount("p1", pending.UID, missingSecret, time.Minute)},
			wantReason: FailedMountReason, wantMsg: missingSecret,
		},
		{
			name: "the Secret appeared and the pod runs: the condition goes",
			vmi: newVMI(v1.Scheduled, scheduled, func(v *v1.VirtualMachineInstance) {
				v.Status.Conditions = []v1.VirtualMachineInstanceCondition{
					{Type: v1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: FailedMountReason, Message: missingSecret},
				}
			}),
			pod:    newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodRunning)),
			events: []*corev1.Event{failedMount("p1", pending.UID, missingSecret, time.Minute)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []*v1.VirtualMachineInstance{tt.vmi}, []*corev1.Pod{tt.pod})
			for _, e := range tt.events {
				_, err := f.kube.CoreV1().Events("ns").Create(context.Background(), e, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			err := f.c.sync(context.Background(), "ns/vm1")
			if waitsOnNode(tt.pod) {
				var requeue controllerutil.RequeueAfter
				require.ErrorAs(t, err, &requeue, "a pod waiting on its node is looked at again")
				assert.Equal(t, mountRecheck, time.Duration(requeue))
			} else {
				require.NoError(t, err)
			}
			vmi := f.vmi("vm1")
			assert.Equal(t, v1.Scheduled, vmi.Status.Phase)
			cond := condition(vmi, v1.VirtualMachineInstanceSynchronized)
			if tt.wantReason == "" {
				assert.Nil(t, cond)
			} else {
				require.NotNil(t, cond)
				assert.Equal(t, corev1.ConditionFalse, cond.Status)
				assert.Equal(t, tt.wantReason, cond.Reason)
				assert.Equal(t, tt.wantMsg, cond.Message)
			}
			assert.Equal(t, tt.wantEvents, f.events())
		})
	}
}

// TestMountFailureEventsAreReadNotCached: the events are asked for, a few of the one pod
// (by its UID), when the pod waits on its node, and no other time; whatever anyone writes
// into events stays out of virt-controller's memory, and a message is bounded.
func TestMountFailureEventsAreReadNotCached(t *testing.T) {
	pending := newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodPending))
	f := newFixture(t, []*v1.VirtualMachineInstance{newVMI(v1.Scheduled, scheduled)}, []*corev1.Pod{pending})
	long := missingSecret + strings.Repeat("é", 2000)
	_, err := f.kube.CoreV1().Events("ns").Create(context.Background(), failedMount("p1", pending.UID, long, time.Second), metav1.CreateOptions{})
	require.NoError(t, err)
	f.kube.ClearActions()

	msg := f.c.mountFailure(context.Background(), pending)
	assert.True(t, strings.HasPrefix(msg, missingSecret))
	assert.LessOrEqual(t, len(msg), maxMountMessage)
	assert.True(t, utf8.ValidString(msg), "cut on a rune boundary")
	lists := testutil.Filter(f.kube.Actions(), "list", "events", "")
	require.Len(t, lists, 1)
	restrictions := lists[0].(k8stesting.ListAction).GetListRestrictions()
	assert.Equal(t, "involvedObject.uid="+string(pending.UID)+",reason=FailedMount", restrictions.Fields.String())

	f.kube.ClearActions()
	assert.Empty(t, f.c.mountFailure(context.Background(), newPod("p2", "uid-2", bound("node-a"), podPhase(corev1.PodRunning))))
	assert.Empty(t, f.c.mountFailure(context.Background(), newPod("p3", "uid-3", podPhase(corev1.PodPending))))
	assert.Empty(t, testutil.Filter(f.kube.Actions(), "list", "events", ""), "no read for a pod that runs or has no node")
}
