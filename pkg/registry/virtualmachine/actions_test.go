package virtualmachine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func vmWith(strategy kubevirt.VirtualMachineRunStrategy) *kubevirt.VirtualMachine {
	return &kubevirt.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm"},
		Spec: kubevirt.VirtualMachineSpec{RunStrategy: ptr.To(strategy)}}
}

func vmiIn(phase kubevirt.VirtualMachineInstancePhase) *kubevirt.VirtualMachineInstance {
	return &kubevirt.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", UID: "vmi-uid"},
		Spec:   kubevirt.VirtualMachineInstanceSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)},
		Status: kubevirt.VirtualMachineInstanceStatus{Phase: phase}}
}

// outcome is what an action did to a VM: a new run strategy, or queued requests, or a 409.
type outcome struct {
	strategy kubevirt.VirtualMachineRunStrategy
	requests []kubevirt.StateChangeRequestAction
	conflict bool
}

func observe(t *testing.T, vm *kubevirt.VirtualMachine, part vmPart, err error) outcome {
	t.Helper()
	if err != nil {
		require.True(t, apierrors.IsConflict(err), "only conflicts are expected, got %v", err)
		return outcome{conflict: true}
	}
	if part == specPart {
		return outcome{strategy: vm.Spec.EffectiveRunStrategy()}
	}
	var actions []kubevirt.StateChangeRequestAction
	for _, r := range vm.Status.StateChangeRequests {
		actions = append(actions, r.Action)
	}
	return outcome{requests: actions}
}

var (
	start = kubevirt.StartRequest
	stop  = kubevirt.StopRequest
)

func TestDecideStart(t *testing.T) {
	tests := []struct {
		name     string
		strategy kubevirt.VirtualMachineRunStrategy
		vmi      *kubevirt.VirtualMachineInstance
		paused   bool
		want     outcome
	}{
		{"Halted turns on", kubevirt.RunStrategyHalted, nil, false, outcome{strategy: kubevirt.RunStrategyAlways}},
		{"Halted paused asks the controller", kubevirt.RunStrategyHalted, nil, true, outcome{requests: []kubevirt.StateChangeRequestAction{start}}},
		{"Halted with a finished instance turns on", kubevirt.RunStrategyHalted, vmiIn(kubevirt.Succeeded), false, outcome{strategy: kubevirt.RunStrategyAlways}},
		{"Manual queues a start", kubevirt.RunStrategyManual, nil, false, outcome{requests: []kubevirt.StateChangeRequestAction{start}}},
		{"Manual after a finished instance stops it first", kubevirt.RunStrategyManual, vmiIn(kubevirt.Failed), false, outcome{requests: []kubevirt.StateChangeRequestAction{stop, start}}},
		{"RerunOnFailure queues a start", kubevirt.RunStrategyRerunOnFailure, nil, false, outcome{requests: []kubevirt.StateChangeRequestAction{start}}},
		{"RerunOnFailure after success", kubevirt.RunStrategyRerunOnFailure, vmiIn(kubevirt.Succeeded), false, outcome{requests: []kubevirt.StateChangeRequestAction{stop, start}}},
		{"RerunOnFailure refuses after failure", kubevirt.RunStrategyRerunOnFailure, vmiIn(kubevirt.Failed), false, outcome{conflict: true}},
		{"Always refuses", kubevirt.RunStrategyAlways, nil, false, outcome{conflict: true}},
		{"Once refuses", kubevirt.RunStrategyOnce, nil, false, outcome{conflict: true}},
		{"a running instance refuses", kubevirt.RunStrategyManual, vmiIn(kubevirt.Running), false, outcome{conflict: true}},
		{"a scheduled instance refuses", kubevirt.RunStrategyHalted, vmiIn(kubevirt.Scheduled), false, outcome{conflict: true}},
		{"an instance in its first phase does not count", kubevirt.RunStrategyManual, vmiIn(kubevirt.VmPhaseUnset), false, outcome{requests: []kubevirt.StateChangeRequestAction{start}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm := vmWith(tc.strategy)
			part, err := decideStart(vm, tc.vmi, v1.StartOptions{Paused: tc.paused})
			assert.Equal(t, tc.want, observe(t, vm, part, err))
			if tc.paused && err == nil {
				assert.Equal(t, map[string]string{"paused": "true"}, vm.Status.StateChangeRequests[0].Data)
			}
		})
	}
}

func TestDecideStop(t *testing.T) {
	tests := []struct {
		name        string
		strategy    kubevirt.VirtualMachineRunStrategy
		vmi         *kubevirt.VirtualMachineInstance
		gracePeriod *int64
		want        outcome
	}{
		{"Always turns off", kubevirt.RunStrategyAlways, vmiIn(kubevirt.Running), nil, outcome{strategy: kubevirt.RunStrategyHalted}},
		{"Always turns off without an instance", kubevirt.RunStrategyAlways, nil, nil, outcome{strategy: kubevirt.RunStrategyHalted}},
		{"Once turns off", kubevirt.RunStrategyOnce, vmiIn(kubevirt.Running), nil, outcome{strategy: kubevirt.RunStrategyHalted}},
		{"Manual queues a stop", kubevirt.RunStrategyManual, vmiIn(kubevirt.Running), nil, outcome{requests: []kubevirt.StateChangeRequestAction{stop}}},
		{"RerunOnFailure queues a stop", kubevirt.RunStrategyRerunOnFailure, vmiIn(kubevirt.Running), nil, outcome{requests: []kubevirt.StateChangeRequestAction{stop}}},
		{"Manual without an instance refuses", kubevirt.RunStrategyManual, nil, nil, outcome{conflict: true}},
		{"Manual with a finished instance refuses", kubevirt.RunStrategyManual, vmiIn(kubevirt.Succeeded), nil, outcome{conflict: true}},
		{"Halted refuses", kubevirt.RunStrategyHalted, vmiIn(kubevirt.Running), nil, outcome{conflict: true}},
		{"Halted refuses a longer grace period", kubevirt.RunStrategyHalted, vmiIn(kubevirt.Running), ptr.To[int64](60), outcome{conflict: true}},
		{"Halted takes a shorter grace period", kubevirt.RunStrategyHalted, vmiIn(kubevirt.Running), ptr.To[int64](0), outcome{requests: []kubevirt.StateChangeRequestAction{stop}}},
		{"Halted without an instance refuses", kubevirt.RunStrategyHalted, nil, ptr.To[int64](0), outcome{conflict: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm := vmWith(tc.strategy)
			part, err := decideStop(vm, tc.vmi, v1.StopOptions{GracePeriod: tc.gracePeriod})
			assert.Equal(t, tc.want, observe(t, vm, part, err))
			if err == nil && part == statusPart {
				assert.Equal(t, "vmi-uid", string(*vm.Status.StateChangeRequests[0].UID), "a stop names the instance it stops")
			}
		})
	}
}

func TestDecideRestart(t *testing.T) {
	tests := []struct {
		name     string
		strategy kubevirt.VirtualMachineRunStrategy
		vmi      *kubevirt.VirtualMachineInstance
		want     outcome
	}{
		{"Always", kubevirt.RunStrategyAlways, vmiIn(kubevirt.Running), outcome{requests: []kubevirt.StateChangeRequestAction{stop, start}}},
		{"Manual", kubevirt.RunStrategyManual, vmiIn(kubevirt.Running), outcome{requests: []kubevirt.StateChangeRequestAction{stop, start}}},
		{"RerunOnFailure", kubevirt.RunStrategyRerunOnFailure, vmiIn(kubevirt.Running), outcome{requests: []kubevirt.StateChangeRequestAction{stop, start}}},
		{"Halted refuses", kubevirt.RunStrategyHalted, vmiIn(kubevirt.Running), outcome{conflict: true}},
		{"Once refuses", kubevirt.RunStrategyOnce, vmiIn(kubevirt.Running), outcome{conflict: true}},
		{"no instance refuses", kubevirt.RunStrategyAlways, nil, outcome{conflict: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm := vmWith(tc.strategy)
			part, err := decideRestart(vm, tc.vmi)
			assert.Equal(t, tc.want, observe(t, vm, part, err))
		})
	}
}

func TestDeprecatedRunningIsKept(t *testing.T) {
	vm := &kubevirt.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm"}, Spec: kubevirt.VirtualMachineSpec{Running: ptr.To(false)}}
	part, err := decideStart(vm, nil, v1.StartOptions{})
	require.NoError(t, err)
	assert.Equal(t, specPart, part)
	assert.Equal(t, ptr.To(true), vm.Spec.Running, "a VM written with running keeps running, so re-applied manifests agree")
	assert.Nil(t, vm.Spec.RunStrategy)

	part, err = decideStop(vm, vmiIn(kubevirt.Running), v1.StopOptions{})
	require.NoError(t, err)
	assert.Equal(t, specPart, part)
	assert.Equal(t, ptr.To(false), vm.Spec.Running)
}

func TestPendingRequests(t *testing.T) {
	vm := vmWith(kubevirt.RunStrategyManual)
	vm.Status.StartFailure = &kubevirt.VirtualMachineStartFailure{ConsecutiveFailCount: 3}
	_, err := decideStart(vm, nil, v1.StartOptions{})
	require.NoError(t, err)
	assert.Nil(t, vm.Status.StartFailure, "an explicit start resets the back-off")

	_, err = decideStart(vm, nil, v1.StartOptions{})
	assert.True(t, apierrors.IsConflict(err), "a second start while one is queued conflicts")

	_, err = decideStop(vm, vmiIn(kubevirt.Scheduling), v1.StopOptions{})
	require.NoError(t, err, "a stop replaces a queued start")
	assert.Equal(t, outcome{requests: []kubevirt.StateChangeRequestAction{stop}}, observe(t, vm, statusPart, nil))

	_, err = decideStop(vm, vmiIn(kubevirt.Scheduling), v1.StopOptions{})
	assert.True(t, apierrors.IsConflict(err), "a second stop conflicts")
}

func TestStartWaitsForRestore(t *testing.T) {
	for _, strategy := range []kubevirt.VirtualMachineRunStrategy{kubevirt.RunStrategyHalted, kubevirt.RunStrategyManual} {
		t.Run(string(strategy), func(t *testing.T) {
			vm := vmWith(strategy)
			vm.Status.RestoreInProgress = ptr.To("r1")
			_, err := decideStart(vm, nil, v1.StartOptions{Paused: true})
			require.True(t, apierrors.IsConflict(err), "got %v", err)
			assert.Contains(t, err.Error(), `Cannot start VM until restore "r1" completes`)
		})
	}
}
