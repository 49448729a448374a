package vmi

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

const missingSecret = `MountVolume.SetUp failed for volume "hangar-secret-0" : secret "seed" not found`

// failedMount is the kubelet's event about a pod whose volume it cannot mount.
func failedMount(pod string, uid types.UID, message string, ago time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "ns", Name: pod + "." + string(uid) + message[:8]},
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
				require.NoError(t, f.c.eventIndexer.Add(e))
			}
			require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
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

// TestMountFailureEventWakesInstance: the kubelet's event brings the pod's instance back to the
// queue; an event about another pod does not.
func TestMountFailureEventWakesInstance(t *testing.T) {
	pod := newPod("p1", "uid-1", bound("node-a"))
	f := newFixture(t, []*v1.VirtualMachineInstance{newVMI(v1.Scheduled, scheduled)}, []*corev1.Pod{pod})
	f.c.enqueueEventPod(failedMount("not-a-launcher", "x", missingSecret, 0))
	assert.Zero(t, f.c.queue.Len())
	f.c.enqueueEventPod(failedMount("p1", pod.UID, missingSecret, 0))
	require.Equal(t, 1, f.c.queue.Len())
	key, _ := f.c.queue.Get()
	assert.Equal(t, "ns/vm1", key)
}

func TestFailedMountEventsSelector(t *testing.T) {
	assert.Equal(t, "involvedObject.kind=Pod,reason=FailedMount", FailedMountEvents)
	sel, err := fields.ParseSelector(FailedMountEvents)
	require.NoError(t, err)
	assert.True(t, sel.Matches(fields.Set{"involvedObject.kind": "Pod", "reason": "FailedMount"}))
	assert.False(t, sel.Matches(fields.Set{"involvedObject.kind": "Pod", "reason": "Scheduled"}))
	assert.False(t, sel.Matches(fields.Set{"involvedObject.kind": "VirtualMachineInstance", "reason": "FailedMount"}))
}
