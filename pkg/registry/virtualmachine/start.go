package virtualmachine

import (
	"context"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation"
	"github.com/hangarvm/hangar/pkg/registry/action"
)

// Start serves virtualmachines/start.
func (a *Actions) Start(ctx context.Context, name string, body action.Body) error {
	opts := v1.StartOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	vmi, err := a.instance(ctx, name)
	if err != nil {
		return err
	}
	var check func(*kubevirt.VirtualMachine) error
	if a.starts != nil {
		// Every start that is not refused starts an instance (now, or through a request the
		// controller carries out), whose launcher pod the cluster may refuse: say so now.
		check = func(vm *kubevirt.VirtualMachine) error { return a.starts.CheckStart(ctx, vm) }
	}
	return a.apply(ctx, name, action.IsDryRun(opts.DryRun), func(vm *kubevirt.VirtualMachine) (vmPart, error) {
		return decideStart(vm, vmi, opts)
	}, check)
}

// decideStart follows KubeVirt: Halted turns on (or asks for a paused start), Manual and
// RerunOnFailure queue a start (after a stop of a finished instance), Always and Once refuse.
func decideStart(vm *kubevirt.VirtualMachine, vmi *kubevirt.VirtualMachineInstance, opts v1.StartOptions) (vmPart, error) {
	if isRunning(vmi) {
		return 0, conflict(vm.Name, "VM is already running")
	}
	if restore := vm.Status.RestoreInProgress; restore != nil {
		// The restore rewrites the spec and the disks the instance would start with.
		return 0, conflict(vm.Name, "%s", validation.RestoreLockMessage(*restore))
	}
	start := kubevirt.VirtualMachineStateChangeRequest{Action: kubevirt.StartRequest}
	if opts.Paused {
		start.Data = map[string]string{v1.StartRequestDataPausedKey: v1.StartRequestDataPausedTrue}
	}
	switch strategy := vm.Spec.EffectiveRunStrategy(); strategy {
	case kubevirt.RunStrategyHalted:
		if opts.Paused {
			// The controller starts it paused and switches the run strategy on.
			return statusPart, addStateChangeRequests(vm, start)
		}
		setRunning(vm, true)
		return specPart, nil
	case kubevirt.RunStrategyManual, kubevirt.RunStrategyRerunOnFailure:
		if strategy == kubevirt.RunStrategyRerunOnFailure && vmi != nil && vmi.Status.Phase == kubevirt.Failed {
			return 0, conflict(vm.Name, "%s does not support starting VM from failed state", strategy)
		}
		if vmi != nil && vmi.IsFinal() {
			// The finished instance is still there: it must go before a new one comes.
			return statusPart, addStateChangeRequests(vm, stopRequest(vmi), start)
		}
		return statusPart, addStateChangeRequests(vm, start)
	default:
		return 0, conflict(vm.Name, "%s does not support manual start requests", strategy)
	}
}
