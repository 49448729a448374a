package vm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

var now = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

type vmiState string

const (
	none       vmiState = "none"
	pendingVMI vmiState = "Pending"
	running    vmiState = "Running"
	succeeded  vmiState = "Succeeded"   // after running
	failed     vmiState = "Failed"      // after running
	failedEarl vmiState = "FailedEarly" // never ran
	deleting   vmiState = "Deleting"
)

func vmiIn(state vmiState) *v1.VirtualMachineInstance {
	if state == none {
		return nil
	}
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "vmi-uid"}}
	ran := []v1.VirtualMachineInstancePhaseTransitionTimestamp{{Phase: v1.Running}}
	switch state {
	case pendingVMI:
		vmi.Status.Phase = v1.Pending
	case running:
		vmi.Status.Phase, vmi.Status.PhaseTransitionTimestamps = v1.Running, ran
	case succeeded:
		vmi.Status.Phase, vmi.Status.PhaseTransitionTimestamps = v1.Succeeded, ran
	case failed:
		vmi.Status.Phase, vmi.Status.PhaseTransitionTimestamps = v1.Failed, ran
	case failedEarl:
		vmi.Status.Phase = v1.Failed
	case deleting:
		vmi.Status.Phase, vmi.DeletionTimestamp = v1.Running, ptr.To(metav1.NewTime(now))
	}
	return vmi
}

func start() v1.VirtualMachineStateChangeRequest {
	return v1.VirtualMachineStateChangeRequest{Action: v1.StartRequest}
}
func stopFor(uid types.UID) v1.VirtualMachineStateChangeRequest {
	return v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest, UID: ptr.To(uid)}
}

func vmWith(strategy v1.VirtualMachineRunStrategy, mutate ...func(*v1.VirtualMachine)) *v1.VirtualMachine {
	vm := &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "vm-uid"},
		Spec:   v1.VirtualMachineSpec{RunStrategy: ptr.To(strategy), Template: &v1.VirtualMachineInstanceTemplateSpec{}},
		Status: v1.VirtualMachineStatus{RunStrategy: strategy}}
	for _, m := range mutate {
		m(vm)
	}
	return vm
}

func requests(r ...v1.VirtualMachineStateChangeRequest) func(*v1.VirtualMachine) {
	return func(vm *v1.VirtualMachine) { vm.Status.StateChangeRequests = r }
}

func counted(vm *v1.VirtualMachine) {
	vm.Status.StartFailure = &v1.VirtualMachineStartFailure{LastFailedVMIUID: "vmi-uid", ConsecutiveFailCount: 1,
		RetryAfterTimestamp: ptr.To(metav1.NewTime(now.Add(-time.Second)))}
}

func backingOff(vm *v1.VirtualMachine) {
	vm.Status.StartFailure = &v1.VirtualMachineStartFailure{LastFailedVMIUID: "old", ConsecutiveFailCount: 2,
		RetryAfterTimestamp: ptr.To(metav1.NewTime(now.Add(40 * time.Second)))}
}

// TestDecide covers every run strategy against every instance state that matters to it.
func TestDecide(t *testing.T) {
	create, del := action{create: true}, action{delete: true}
	tests := []struct {
		strategy v1.VirtualMachineRunStrategy
		vmi      vmiState
		vm       []func(*v1.VirtualMachine)
		want     action
	}{
		{v1.RunStrategyAlways, none, nil, create},
		{v1.RunStrategyAlways, none, []func(*v1.VirtualMachine){backingOff}, action{retryAfter: 40 * time.Second}},
		{v1.RunStrategyAlways, pendingVMI, nil, action{}},
		{v1.RunStrategyAlways, running, nil, action{}},
		{v1.RunStrategyAlways, running, []func(*v1.VirtualMachine){requests(stopFor("vmi-uid"), start())}, del},
		{v1.RunStrategyAlways, running, []func(*v1.VirtualMachine){requests(stopFor("other"))}, action{}},
		{v1.RunStrategyAlways, succeeded, nil, del},
		{v1.RunStrategyAlways, failed, nil, del},
		{v1.RunStrategyAlways, failedEarl, nil, action{}}, // count the failure first
		{v1.RunStrategyAlways, failedEarl, []func(*v1.VirtualMachine){counted}, del},
		{v1.RunStrategyAlways, deleting, nil, action{}},

		{v1.RunStrategyRerunOnFailure, none, nil, action{}},
		{v1.RunStrategyRerunOnFailure, none, []func(*v1.VirtualMachine){func(vm *v1.VirtualMachine) { vm.Status.RunStrategy = v1.RunStrategyHalted }}, create},
		{v1.RunStrategyRerunOnFailure, none, []func(*v1.VirtualMachine){func(vm *v1.VirtualMachine) { vm.Status.RunStrategy = "" }}, create},
		{v1.RunStrategyRerunOnFailure, none, []func(*v1.VirtualMachine){requests(start())}, create},
		{v1.RunStrategyRerunOnFailure, none, []func(*v1.VirtualMachine){requests(start()), backingOff}, action{retryAfter: 40 * time.Second}},
		{v1.RunStrategyRerunOnFailure, running, nil, action{}},
		{v1.RunStrategyRerunOnFailure, running, []func(*v1.VirtualMachine){requests(stopFor("vmi-uid"))}, del},
		{v1.RunStrategyRerunOnFailure, succeeded, nil, del},
		{v1.RunStrategyRerunOnFailure, failed, nil, action{addStartRequest: true}},
		{v1.RunStrategyRerunOnFailure, failed, []func(*v1.VirtualMachine){requests(start())}, del},
		{v1.RunStrategyRerunOnFailure, failedEarl, nil, action{}},
		{v1.RunStrategyRerunOnFailure, failedEarl, []func(*v1.VirtualMachine){counted}, action{addStartRequest: true}},

		{v1.RunStrategyManual, none, nil, action{}},
		{v1.RunStrategyManual, none, []func(*v1.VirtualMachine){requests(start())}, create},
		{v1.RunStrategyManual, none, []func(*v1.VirtualMachine){requests(stopFor("vmi-uid"), start())}, action{}},
		{v1.RunStrategyManual, running, nil, action{}},
		{v1.RunStrategyManual, running, []func(*v1.VirtualMachine){requests(start())}, action{}},
		{v1.RunStrategyManual, running, []func(*v1.VirtualMachine){requests(stopFor("vmi-uid"))}, del},
		{v1.RunStrategyManual, succeeded, nil, action{}},
		{v1.RunStrategyManual, failedEarl, nil, action{}},

		{v1.RunStrategyHalted, none, nil, action{}},
		{v1.RunStrategyHalted, none, []func(*v1.VirtualMachine){requests(start())}, action{runAlways: true}},
		{v1.RunStrategyHalted, pendingVMI, nil, del},
		{v1.RunStrategyHalted, running, nil, del},
		{v1.RunStrategyHalted, failedEarl, nil, del},
		{v1.RunStrategyHalted, deleting, nil, action{}},

		{v1.RunStrategyOnce, none, nil, create},
		{v1.RunStrategyOnce, running, nil, action{}},
		{v1.RunStrategyOnce, succeeded, nil, action{}},
		{v1.RunStrategyOnce, failed, nil, action{}},
		{v1.RunStrategyOnce, failedEarl, []func(*v1.VirtualMachine){counted}, action{}},
	}
	for _, tt := range tests {
		vm := vmWith(tt.strategy, tt.vm...)
		name := string(tt.strategy) + "/" + string(tt.vmi)
		if len(vm.Status.StateChangeRequests) > 0 {
			name += "/" + string(vm.Status.StateChangeRequests[0].Action)
		}
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, decide(vm, vmiIn(tt.vmi), now))
		})
	}
}

// TestRunningField: the deprecated spec.running maps to Always and Halted.
func TestRunningField(t *testing.T) {
	vm := vmWith(v1.RunStrategyAlways, func(vm *v1.VirtualMachine) { vm.Spec.RunStrategy, vm.Spec.Running = nil, ptr.To(true) })
	assert.Equal(t, action{create: true}, decide(vm, nil, now))
	vm.Spec.Running = ptr.To(false)
	assert.Equal(t, action{delete: true}, decide(vm, vmiIn(running), now))
}

func TestStartBackoff(t *testing.T) {
	noJitter := func(int) int { return 0 }
	maxJitter := func(n int) int { return n - 1 }
	tests := []struct {
		fails    int
		min, max time.Duration
	}{
		{0, 10 * time.Second, 15 * time.Second},
		{1, 10 * time.Second, 15 * time.Second},
		{2, 40 * time.Second, 60 * time.Second},
		{3, 90 * time.Second, 135 * time.Second},
		{5, 250 * time.Second, 300 * time.Second},
		{6, 300 * time.Second, 300 * time.Second},
		{100, 300 * time.Second, 300 * time.Second},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.min, startBackoff(tt.fails, noJitter), "fails=%d without jitter", tt.fails)
		assert.Equal(t, tt.max, startBackoff(tt.fails, maxJitter), "fails=%d with the largest jitter", tt.fails)
		for range 20 {
			d := startBackoff(tt.fails, randIntn)
			assert.True(t, d >= tt.min && d <= tt.max, "fails=%d: %s", tt.fails, d)
		}
	}
}
