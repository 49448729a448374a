package virtualmachine

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/registry/action"
)

// Restart serves virtualmachines/restart.
func (a *Actions) Restart(ctx context.Context, name string, body action.Body) error {
	opts := v1.RestartOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	if g := opts.GracePeriodSeconds; g != nil && *g != 0 {
		if *g < 0 {
			return apierrors.NewBadRequest("gracePeriodSeconds must be greater than or equal to 0")
		}
		return apierrors.NewBadRequest("a forced restart supports only gracePeriodSeconds=0")
	}
	vmi, err := a.instance(ctx, name)
	if err != nil {
		return err
	}
	dryRun := action.IsDryRun(opts.DryRun)
	err = a.apply(ctx, name, dryRun, func(vm *kubevirt.VirtualMachine) (vmPart, error) {
		return decideRestart(vm, vmi)
	}, nil)
	if err != nil || opts.GracePeriodSeconds == nil || dryRun || a.pods == nil {
		return err
	}
	// A forced restart does not wait for the guest: its launcher pod goes at once.
	return a.pods.DeleteLauncherPods(ctx, vmi.Namespace, vmi.UID, 0)
}

// decideRestart queues a stop of the current instance and a start, for every run strategy
// that restarts by itself or on request; Halted and Once refuse.
func decideRestart(vm *kubevirt.VirtualMachine, vmi *kubevirt.VirtualMachineInstance) (vmPart, error) {
	switch strategy := vm.Spec.EffectiveRunStrategy(); strategy {
	case kubevirt.RunStrategyHalted, kubevirt.RunStrategyOnce:
		return 0, conflict(vm.Name, "RunStrategy %s does not support manual restart requests", strategy)
	}
	if vmi == nil {
		return 0, conflict(vm.Name, "VM is not running")
	}
	return statusPart, addStateChangeRequests(vm, stopRequest(vmi),
		kubevirt.VirtualMachineStateChangeRequest{Action: kubevirt.StartRequest})
}
