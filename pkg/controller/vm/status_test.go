package vm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func withCondition(t v1.VirtualMachineInstanceConditionType, s corev1.ConditionStatus, reason string) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		vmi.Status.Conditions = append(vmi.Status.Conditions, v1.VirtualMachineInstanceCondition{Type: t, Status: s, Reason: reason})
	}
}

func vmiMut(state vmiState, mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := vmiIn(state)
	for _, m := range mutate {
		m(vmi)
	}
	return vmi
}

// TestPrintableStatus checks KubeVirt's precedence: the first status that holds wins.
func TestPrintableStatus(t *testing.T) {
	deletedVM := func(vm *v1.VirtualMachine) { vm.DeletionTimestamp = ptr.To(metav1.NewTime(now)) }
	crashLooping := func(vm *v1.VirtualMachine) {
		vm.Status.StartFailure = &v1.VirtualMachineStartFailure{ConsecutiveFailCount: 2}
	}
	paused := withCondition(v1.VirtualMachineInstancePaused, corev1.ConditionTrue, "")
	unschedulable := withCondition("PodScheduled", corev1.ConditionFalse, corev1.PodReasonUnschedulable)
	pvcNotFound := withCondition(v1.VirtualMachineInstanceSynchronized, corev1.ConditionFalse, "FailedPvcNotFound")
	phase := func(p v1.VirtualMachineInstancePhase) func(*v1.VirtualMachineInstance) {
		return func(vmi *v1.VirtualMachineInstance) { vmi.Status.Phase = p }
	}
	tests := []struct {
		name     string
		strategy v1.VirtualMachineRunStrategy
		vm       []func(*v1.VirtualMachine)
		vmi      *v1.VirtualMachineInstance
		p        pending
		want     v1.VirtualMachinePrintableStatus
	}{
		{"Terminating beats everything", v1.RunStrategyAlways, []func(*v1.VirtualMachine){deletedVM}, vmiMut(deleting), pending{stop: true}, v1.VirtualMachineStatusTerminating},
		{"Stopping beats Paused", v1.RunStrategyAlways, nil, vmiMut(deleting, paused), pending{}, v1.VirtualMachineStatusStopping},
		{"Stopping while our delete is in flight", v1.RunStrategyHalted, nil, vmiMut(running), pending{stop: true}, v1.VirtualMachineStatusStopping},
		{"a final instance being deleted is not Stopping", v1.RunStrategyAlways, nil, vmiMut(succeeded), pending{stop: true}, v1.VirtualMachineStatusStopped},
		{"Paused beats Running", v1.RunStrategyAlways, nil, vmiMut(running, paused), pending{}, v1.VirtualMachineStatusPaused},
		{"Running", v1.RunStrategyAlways, nil, vmiMut(running), pending{}, v1.VirtualMachineStatusRunning},
		{"Running beats Unschedulable", v1.RunStrategyAlways, nil, vmiMut(running, unschedulable), pending{}, v1.VirtualMachineStatusRunning},
		{"ErrorPvcNotFound beats ErrorUnschedulable", v1.RunStrategyAlways, nil, vmiMut(pendingVMI, phase(v1.Pending), pvcNotFound, unschedulable), pending{}, v1.VirtualMachineStatusPvcNotFound},
		{"ErrorUnschedulable beats Starting", v1.RunStrategyAlways, nil, vmiMut(pendingVMI, phase(v1.Scheduling), unschedulable), pending{}, v1.VirtualMachineStatusUnschedulable},
		{"Starting: unprocessed", v1.RunStrategyAlways, nil, vmiMut(pendingVMI, phase(v1.VmPhaseUnset)), pending{}, v1.VirtualMachineStatusStarting},
		{"Starting: Scheduling", v1.RunStrategyAlways, nil, vmiMut(pendingVMI, phase(v1.Scheduling)), pending{}, v1.VirtualMachineStatusStarting},
		{"Starting: Scheduled", v1.RunStrategyAlways, nil, vmiMut(pendingVMI, phase(v1.Scheduled)), pending{}, v1.VirtualMachineStatusStarting},
		{"Starting: creation in flight", v1.RunStrategyAlways, nil, nil, pending{start: true}, v1.VirtualMachineStatusStarting},
		{"Starting beats CrashLoopBackOff", v1.RunStrategyAlways, []func(*v1.VirtualMachine){crashLooping}, nil, pending{start: true}, v1.VirtualMachineStatusStarting},
		{"CrashLoopBackOff without an instance", v1.RunStrategyAlways, []func(*v1.VirtualMachine){crashLooping}, nil, pending{}, v1.VirtualMachineStatusCrashLoopBackOff},
		{"CrashLoopBackOff with a final instance", v1.RunStrategyRerunOnFailure, []func(*v1.VirtualMachine){crashLooping}, vmiMut(failedEarl), pending{}, v1.VirtualMachineStatusCrashLoopBackOff},
		{"CrashLoopBackOff for Once", v1.RunStrategyOnce, []func(*v1.VirtualMachine){crashLooping}, vmiMut(failedEarl), pending{}, v1.VirtualMachineStatusCrashLoopBackOff},
		{"no CrashLoopBackOff for Manual", v1.RunStrategyManual, []func(*v1.VirtualMachine){crashLooping}, nil, pending{}, v1.VirtualMachineStatusStopped},
		{"no CrashLoopBackOff for Halted", v1.RunStrategyHalted, []func(*v1.VirtualMachine){crashLooping}, nil, pending{}, v1.VirtualMachineStatusStopped},
		{"Stopped: final instance", v1.RunStrategyOnce, nil, vmiMut(succeeded), pending{}, v1.VirtualMachineStatusStopped},
		{"Stopped: no instance", v1.RunStrategyHalted, nil, nil, pending{}, v1.VirtualMachineStatusStopped},
		{"Unknown phase", v1.RunStrategyAlways, nil, vmiMut(pendingVMI, phase(v1.Unknown)), pending{}, v1.VirtualMachineStatusUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, printableStatus(vmWith(tt.strategy, tt.vm...), tt.vmi, tt.p))
		})
	}
}

func TestNextStatus(t *testing.T) {
	noJitter := func(int) int { return 0 }
	t.Run("a start request is consumed once a live instance exists", func(t *testing.T) {
		vm := vmWith(v1.RunStrategyManual, requests(start(), stopFor("x")))
		s := nextStatus(vm, vmiIn(pendingVMI), pending{}, nil, now, noJitter)
		assert.Equal(t, []v1.VirtualMachineStateChangeRequest{stopFor("x")}, s.StateChangeRequests)
		s = nextStatus(vm, vmiIn(failedEarl), pending{}, nil, now, noJitter)
		assert.Len(t, s.StateChangeRequests, 2, "a final instance does not satisfy a start")
	})
	t.Run("a stop request is consumed once its instance is gone", func(t *testing.T) {
		vm := vmWith(v1.RunStrategyAlways, requests(stopFor("vmi-uid"), start()))
		assert.Len(t, nextStatus(vm, vmiIn(running), pending{}, nil, now, noJitter).StateChangeRequests, 2)
		assert.Equal(t, []v1.VirtualMachineStateChangeRequest{start()}, nextStatus(vm, nil, pending{}, nil, now, noJitter).StateChangeRequests)
		other := vmiIn(running)
		other.UID = "new"
		assert.Equal(t, []v1.VirtualMachineStateChangeRequest{start()}, nextStatus(vm, other, pending{}, nil, now, noJitter).StateChangeRequests)
	})
	t.Run("early failures count up with back-off, a run resets", func(t *testing.T) {
		vm := vmWith(v1.RunStrategyAlways)
		s := nextStatus(vm, vmiIn(failedEarl), pending{}, nil, now, noJitter)
		require.NotNil(t, s.StartFailure)
		assert.Equal(t, 1, s.StartFailure.ConsecutiveFailCount)
		assert.Equal(t, now.Add(10*time.Second), s.StartFailure.RetryAfterTimestamp.Time)
		assert.Equal(t, v1.VirtualMachineStatusCrashLoopBackOff, s.PrintableStatus)

		vm.Status = s
		again := nextStatus(vm, vmiIn(failedEarl), pending{}, nil, now.Add(time.Second), noJitter)
		assert.Equal(t, s.StartFailure, again.StartFailure, "the same instance counts once")

		second := vmiIn(failedEarl)
		second.UID = "second"
		s = nextStatus(vm, second, pending{}, nil, now, noJitter)
		assert.Equal(t, 2, s.StartFailure.ConsecutiveFailCount)
		assert.Equal(t, now.Add(40*time.Second), s.StartFailure.RetryAfterTimestamp.Time)

		vm.Status = s
		assert.Nil(t, nextStatus(vm, vmiIn(running), pending{}, nil, now, noJitter).StartFailure)
		vm.Spec.RunStrategy = ptr.To(v1.RunStrategyManual)
		assert.Nil(t, nextStatus(vm, nil, pending{}, nil, now, noJitter).StartFailure)
	})
	t.Run("conditions: Ready from the instance, Failure from the sync, Paused copied", func(t *testing.T) {
		vm := vmWith(v1.RunStrategyAlways)
		vmi := vmiMut(running, withCondition(v1.VirtualMachineInstanceReady, corev1.ConditionTrue, ""),
			withCondition(v1.VirtualMachineInstancePaused, corev1.ConditionTrue, "PausedByUser"))
		s := nextStatus(vm, vmi, pending{}, &syncError{reason: ReasonFailedCreate, err: assert.AnError}, now, noJitter)
		assert.True(t, s.Created)
		assert.True(t, s.Ready)
		types := map[v1.VirtualMachineConditionType]v1.VirtualMachineCondition{}
		for _, c := range s.Conditions {
			types[c.Type] = c
		}
		assert.Equal(t, corev1.ConditionTrue, types[v1.VirtualMachineReady].Status)
		assert.Equal(t, ReasonFailedCreate, types[v1.VirtualMachineFailure].Reason)
		assert.Equal(t, "PausedByUser", types[v1.VirtualMachinePaused].Reason)
		assert.Equal(t, v1.VirtualMachineStatusPaused, s.PrintableStatus)

		vm.Status = s
		s = nextStatus(vm, nil, pending{}, nil, now, noJitter)
		assert.False(t, s.Created)
		assert.False(t, s.Ready)
		require.Len(t, s.Conditions, 1, "Failure and Paused go, Ready stays")
		assert.Equal(t, ReasonVMINotExists, s.Conditions[0].Reason)
		assert.Equal(t, corev1.ConditionFalse, s.Conditions[0].Status)
	})
	t.Run("generations come from the instance's annotation", func(t *testing.T) {
		vm := vmWith(v1.RunStrategyAlways, func(vm *v1.VirtualMachine) { vm.Generation = 5; vm.Status.ObservedGeneration = 1 })
		vmi := vmiIn(running)
		vmi.Annotations = map[string]string{GenerationAnnotation: "3"}
		s := nextStatus(vm, vmi, pending{}, nil, now, noJitter)
		assert.Equal(t, int64(3), s.ObservedGeneration)
		assert.Equal(t, int64(5), s.DesiredGeneration)
		assert.Equal(t, int64(1), nextStatus(vm, nil, pending{}, nil, now, noJitter).ObservedGeneration, "kept without an instance")
		assert.Equal(t, v1.RunStrategyAlways, s.RunStrategy)
	})
}
