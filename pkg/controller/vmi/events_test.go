package vmi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func TestRecordTransitions(t *testing.T) {
	withStatus := func(phase v1.VirtualMachineInstancePhase, reason string, conds ...v1.VirtualMachineInstanceCondition) *v1.VirtualMachineInstance {
		vmi := newVMI(phase)
		vmi.Status.Reason = reason
		vmi.Status.Conditions = conds
		return vmi
	}
	pausedCond := v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue}
	syncFailed := v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse,
		Reason: "ContainerDiskNotFound", Message: `containerDisk volume "root": image "x:1" holds no disk`}
	tests := []struct {
		name     string
		old, cur *v1.VirtualMachineInstance
		want     []string
	}{
		{"started", withStatus(v1.Scheduled, ""), withStatus(v1.Running, ""), []string{"Normal Started VirtualMachineInstance started."}},
		{"stopped", withStatus(v1.Running, ""), withStatus(v1.Succeeded, "GuestShutdown"),
			[]string{"Normal Stopped The VirtualMachineInstance was shut down (GuestShutdown)."}},
		{"failed with the launcher's account", withStatus(v1.Scheduled, ""), withStatus(v1.Failed, "ContainerDiskNotFound", syncFailed),
			[]string{`Warning Failed VirtualMachineInstance failed: ContainerDiskNotFound: containerDisk volume "root": image "x:1" holds no disk`}},
		{"failed without one", withStatus(v1.Running, ""), withStatus(v1.Failed, "PodFailed"),
			[]string{"Warning Failed VirtualMachineInstance failed: PodFailed"}},
		{"paused", withStatus(v1.Running, ""), withStatus(v1.Running, "", pausedCond), []string{"Normal Paused VirtualMachineInstance paused."}},
		{"resumed", withStatus(v1.Running, "", pausedCond), withStatus(v1.Running, ""), []string{"Normal Resumed VirtualMachineInstance unpaused."}},
		{"started paused", withStatus(v1.Scheduled, ""), withStatus(v1.Running, "", pausedCond),
			[]string{"Normal Started VirtualMachineInstance started.", "Normal Paused VirtualMachineInstance paused."}},
		{"a resync changes nothing", withStatus(v1.Running, "", pausedCond), withStatus(v1.Running, "", pausedCond), nil},
		{"Pending to Scheduling is no user's concern", withStatus(v1.Pending, ""), withStatus(v1.Scheduling, ""), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			recordTransitions(rec, tt.old, tt.cur)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			assert.Equal(t, tt.want, got)
		})
	}

	// A long message is cut whole runes at a time.
	long := withStatus(v1.Failed, "StartFailed", v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceSynchronized,
		Status: corev1.ConditionFalse, Message: strings.Repeat("é", 2000)})
	msg := failureMessage(long)
	assert.LessOrEqual(t, len(msg), maxEventMessage+64)
	assert.True(t, strings.HasSuffix(msg, "é"))
}
