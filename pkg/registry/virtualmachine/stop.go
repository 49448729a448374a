package virtualmachine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation"
	"github.com/hangarvm/hangar/pkg/registry/action"
)

// InstanceGracePeriodSetter shortens the grace period of a running instance; a stop with
// gracePeriod uses it before the VM changes.
type InstanceGracePeriodSetter interface {
	SetGracePeriod(ctx context.Context, name string, seconds int64, dryRun bool) error
}

// Stop serves virtualmachines/stop.
func (a *Actions) Stop(ctx context.Context, name string, body action.Body) error {
	opts := v1.StopOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	if opts.GracePeriod != nil && *opts.GracePeriod < 0 {
		return apierrors.NewBadRequest("gracePeriod must be greater than or equal to 0")
	}
	if opts.GracePeriod != nil && *opts.GracePeriod > validation.MaxTerminationGracePeriodSeconds {
		// It becomes the instance's terminationGracePeriodSeconds, which has this bound.
		return apierrors.NewBadRequest(fmt.Sprintf("gracePeriod must be at most %d", validation.MaxTerminationGracePeriodSeconds))
	}
	vmi, err := a.instance(ctx, name)
	if err != nil {
		return err
	}
	dryRun := action.IsDryRun(opts.DryRun)
	// Decide first, so a refused stop changes nothing, not even the grace period.
	vm, err := a.vms.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, err := decideStop(vm.(*kubevirt.VirtualMachine).DeepCopy(), vmi, opts); err != nil {
		return err
	}
	if opts.GracePeriod != nil && vmi != nil && !vmi.IsFinal() {
		if err := a.setGracePeriod(ctx, name, *opts.GracePeriod, dryRun); err != nil {
			return err
		}
	}
	return a.apply(ctx, name, dryRun, func(vm *kubevirt.VirtualMachine) (vmPart, error) {
		return decideStop(vm, vmi, opts)
	}, nil)
}

// setGracePeriod shortens the instance's termination grace period: the node agent reads it
// when it shuts the guest down.
func (a *Actions) setGracePeriod(ctx context.Context, name string, seconds int64, dryRun bool) error {
	updater, ok := a.vmis.(rest.Updater)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("instances cannot be updated"))
	}
	options := &metav1.UpdateOptions{}
	if dryRun {
		options.DryRun = []string{metav1.DryRunAll}
	}
	updated, validate := a.admission.Update(ctx, named(vmiTarget, name), options,
		func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			vmi := old.(*kubevirt.VirtualMachineInstance).DeepCopy()
			vmi.Spec.TerminationGracePeriodSeconds = &seconds
			return vmi, nil
		})
	_, _, err := updater.Update(ctx, name, updated, rest.ValidateAllObjectFunc, validate, false, options)
	return err
}

// decideStop follows KubeVirt: Always and Once (and the deprecated running) turn off,
// Manual and RerunOnFailure queue a stop of the running instance, and Halted accepts a stop
// only to shorten the grace period of a shutdown under way.
func decideStop(vm *kubevirt.VirtualMachine, vmi *kubevirt.VirtualMachineInstance, opts v1.StopOptions) (vmPart, error) {
	stopped := vmi == nil || vmi.IsFinal()
	switch strategy := vm.Spec.EffectiveRunStrategy(); strategy {
	case kubevirt.RunStrategyHalted:
		if stopped {
			return 0, conflict(vm.Name, "VM is not running")
		}
		current := kubevirt.DefaultGracePeriodSeconds
		if vmi.Spec.TerminationGracePeriodSeconds != nil {
			current = *vmi.Spec.TerminationGracePeriodSeconds
		}
		if opts.GracePeriod == nil || *opts.GracePeriod >= current {
			return 0, conflict(vm.Name, "%s only supports manual stop requests with a shorter graceperiod", strategy)
		}
		return statusPart, addStateChangeRequests(vm, stopRequest(vmi))
	case kubevirt.RunStrategyManual, kubevirt.RunStrategyRerunOnFailure:
		if stopped {
			return 0, conflict(vm.Name, "VM is not running")
		}
		return statusPart, addStateChangeRequests(vm, stopRequest(vmi))
	default:
		setRunning(vm, false)
		return specPart, nil
	}
}
