package virtualmachine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/registry/action"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstance"
)

// The start, stop and restart actions never talk to a node: they change the VM's run
// strategy (spec) or append to status.stateChangeRequests, and the controller does the rest.
// Each change is decided again on the freshest VM inside the storage's compare-and-swap
// loop, so of two concurrent actions exactly one wins and the other gets a 409.

// LauncherPods deletes the launcher pods of an instance; a forced restart uses it.
type LauncherPods interface {
	DeleteLauncherPods(ctx context.Context, namespace string, vmiUID types.UID, gracePeriodSeconds int64) error
}

// StartChecker refuses the start of a VM whose launcher pod the cluster would refuse
// (pkg/admission/podpolicy), with the API error to answer.
type StartChecker interface {
	CheckStart(ctx context.Context, vm *kubevirt.VirtualMachine) error
}

// Actions carries out the imperative actions of VirtualMachines.
type Actions struct {
	vms      rest.StandardStorage
	vmStatus rest.Updater
	vmis     rest.Getter
	pods     LauncherPods
	starts   StartChecker
	// migrations creates the migrations of the migrate action.
	migrations rest.Creater
	// admission runs the admission chain on every write an action makes.
	admission *action.Admission
	// instanceVolumes hotplugs into the VM's running instance (volumes.go); nil: no hotplug.
	instanceVolumes *virtualmachineinstance.Volumes
}

// What the actions write, as the requests of their own would name it.
var (
	vmTarget        = action.Target{Resource: v1.SchemeGroupVersion.WithResource("virtualmachines"), Kind: v1.SchemeGroupVersion.WithKind("VirtualMachine")}
	vmStatusTarget  = action.Target{Resource: vmTarget.Resource, Subresource: "status", Kind: vmTarget.Kind}
	vmiTarget       = action.Target{Resource: v1.SchemeGroupVersion.WithResource("virtualmachineinstances"), Kind: v1.SchemeGroupVersion.WithKind("VirtualMachineInstance")}
	migrationTarget = action.Target{Resource: v1.SchemeGroupVersion.WithResource("virtualmachineinstancemigrations"),
		Kind: v1.SchemeGroupVersion.WithKind("VirtualMachineInstanceMigration")}
)

// named is t for the object called name.
func named(t action.Target, name string) action.Target {
	t.Name = name
	return t
}

// vmPart says which part of a VM an action writes: the spec or the status.
type vmPart int

const (
	specPart vmPart = iota
	statusPart
)

// decision changes vm in place for an action and says which part it changed, or returns
// why the action cannot be done.
type decision func(vm *kubevirt.VirtualMachine) (vmPart, error)

// apply carries out a decision on the named VM. check, when not nil, vets the VM as read
// once the decision is known, before anything is written.
func (a *Actions) apply(ctx context.Context, name string, dryRun bool, decide decision, check func(*kubevirt.VirtualMachine) error) error {
	obj, err := a.vms.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	part, err := decide(obj.(*kubevirt.VirtualMachine).DeepCopy())
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(obj.(*kubevirt.VirtualMachine)); err != nil {
			return err
		}
	}
	var store rest.Updater = a.vms
	target := vmTarget
	if part == statusPart {
		store, target = a.vmStatus, vmStatusTarget
	}
	options := &metav1.UpdateOptions{}
	if dryRun {
		options.DryRun = []string{metav1.DryRunAll}
	}
	updated, validate := a.admission.Update(ctx, named(target, name), options,
		func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			vm := old.(*kubevirt.VirtualMachine).DeepCopy()
			again, err := decide(vm)
			if err != nil {
				return nil, err
			}
			if again != part {
				return nil, conflict(name, "the VirtualMachine changed while the request was handled; try again")
			}
			return vm, nil
		})
	_, _, err = store.Update(ctx, name, updated, rest.ValidateAllObjectFunc, validate, false, options)
	return err
}

// instance returns the VM's instance, or nil when there is none.
func (a *Actions) instance(ctx context.Context, name string) (*kubevirt.VirtualMachineInstance, error) {
	obj, err := a.vmis.Get(ctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*kubevirt.VirtualMachineInstance), nil
}

func conflict(name, format string, args ...interface{}) error {
	return apierrors.NewConflict(kubevirt.Resource("virtualmachine"), name, fmt.Errorf(format, args...))
}

// setRunning switches a VM on or off in the field it uses: the deprecated running, which
// GitOps tools may own, or runStrategy.
func setRunning(vm *kubevirt.VirtualMachine, running bool) {
	if vm.Spec.Running != nil {
		vm.Spec.Running = &running
		return
	}
	strategy := kubevirt.RunStrategyFromRunning(running)
	vm.Spec.RunStrategy = &strategy
}

// addStateChangeRequests queues requests for the controller. A request already queued makes
// the action a conflict, except that a stop replaces a queued start (a way out of a start
// that cannot complete).
func addStateChangeRequests(vm *kubevirt.VirtualMachine, requests ...kubevirt.VirtualMachineStateChangeRequest) error {
	if pending := vm.Status.StateChangeRequests; len(pending) > 0 {
		stopOnly := len(requests) == 1 && requests[0].Action == kubevirt.StopRequest
		if !stopOnly || containsStop(pending) {
			return conflict(vm.Name, "a start or stop request is already in progress")
		}
		vm.Status.StateChangeRequests = nil
	}
	vm.Status.StateChangeRequests = append(vm.Status.StateChangeRequests, requests...)
	// An explicit request resets the crash-loop back-off.
	vm.Status.StartFailure = nil
	return nil
}

func containsStop(requests []kubevirt.VirtualMachineStateChangeRequest) bool {
	for _, r := range requests {
		if r.Action == kubevirt.StopRequest {
			return true
		}
	}
	return false
}

func stopRequest(vmi *kubevirt.VirtualMachineInstance) kubevirt.VirtualMachineStateChangeRequest {
	uid := vmi.UID
	return kubevirt.VirtualMachineStateChangeRequest{Action: kubevirt.StopRequest, UID: &uid}
}

// isRunning says whether an instance counts as running for the actions: it exists, has not
// stopped, and has got past its first (unset) phase.
func isRunning(vmi *kubevirt.VirtualMachineInstance) bool {
	return vmi != nil && !vmi.IsFinal() && vmi.Status.Phase != kubevirt.Unknown && vmi.Status.Phase != kubevirt.VmPhaseUnset
}
