package virtualmachine

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/registry/action"
)

// memorydump and removememorydump (docs/hotplug.md), as KubeVirt serves them: memorydump
// checks the claim, names the dump's file, adds the memory dump volume to the running
// instance (or renews it, for a new dump to the same claim) and records the request in the
// VM's status (Associating); virt-controller and the node agent write the dump, and the
// request follows the instance's volume status to Completed. removememorydump takes the
// volume out of the instance and marks the request Dissociating; virt-controller drops it
// once the instance no longer lists the volume. Each write goes through admission.

// MemoryDump serves virtualmachines/memorydump.
func (a *Actions) MemoryDump(ctx context.Context, name string, body action.Body) error {
	req := v1.VirtualMachineMemoryDumpRequest{}
	if err := body.DecodeJSON(&req); err != nil {
		return err
	}
	vmi, err := a.instance(ctx, name)
	if err != nil {
		return err
	}
	claim, file := "", ""
	decide := func(vm *kubevirt.VirtualMachine) (vmPart, error) {
		var err error
		if claim, err = memoryDumpClaim(vm, req.ClaimName); err != nil {
			return 0, err
		}
		if vmi == nil || vmi.Status.Phase != kubevirt.Running {
			return 0, conflict(name, "VM is not running: a memory dump is taken of a running guest")
		}
		if file == "" {
			file = v1.MemoryDumpFileName(vmi.Name, claim, time.Now())
		}
		vm.Status.MemoryDumpRequest = &kubevirt.VirtualMachineMemoryDumpRequest{ClaimName: claim, Phase: kubevirt.MemoryDumpAssociating, FileName: &file}
		return statusPart, nil
	}
	// Decided once on the VM as read, so nothing is written for a request that is refused.
	obj, err := a.vms.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, err := decide(obj.(*kubevirt.VirtualMachine).DeepCopy()); err != nil {
		return err
	}
	if err := a.checkMemoryDumpClaim(ctx, name, claim, vmi); err != nil {
		return err
	}
	// The instance first: a request in the VM's status that its instance never got would wait
	// for nothing.
	if err := a.instanceVolumes.SetMemoryDump(ctx, name, claim, file, nil); err != nil {
		return err
	}
	return a.apply(ctx, name, false, decide, nil)
}

// RemoveMemoryDump serves virtualmachines/removememorydump.
func (a *Actions) RemoveMemoryDump(ctx context.Context, name string, body action.Body) error {
	obj, err := a.vms.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	decide := func(vm *kubevirt.VirtualMachine) (vmPart, error) {
		req := vm.Status.MemoryDumpRequest
		switch {
		case req == nil:
			return 0, conflict(name, "can't remove memory dump association for vm %s, no association found", name)
		case req.Remove:
			return 0, conflict(name, "memory dump remove request for pvc [%s] already exists", req.ClaimName)
		}
		vm.Status.MemoryDumpRequest = &kubevirt.VirtualMachineMemoryDumpRequest{ClaimName: req.ClaimName, Phase: kubevirt.MemoryDumpDissociating, Remove: true}
		return statusPart, nil
	}
	vm := obj.(*kubevirt.VirtualMachine)
	if _, err := decide(vm.DeepCopy()); err != nil {
		return err
	}
	vmi, err := a.instance(ctx, name)
	if err != nil {
		return err
	}
	if claim := vm.Status.MemoryDumpRequest.ClaimName; vmi != nil && hasVolume(vmi, claim) {
		if err := a.instanceVolumes.RemoveMemoryDump(ctx, name, claim, nil); err != nil {
			return err
		}
	}
	return a.apply(ctx, name, false, decide, nil)
}

// memoryDumpClaim is the claim a memory dump request for vm goes to, as KubeVirt decides it:
// the request's, or the one associated with the VM already, which only a finished dump may
// have and which a request may not change.
func memoryDumpClaim(vm *kubevirt.VirtualMachine, claim string) (string, error) {
	current := vm.Status.MemoryDumpRequest
	if current != nil {
		switch current.Phase {
		case kubevirt.MemoryDumpDissociating:
			return "", conflict(vm.Name, "can't dump memory for pvc [%s] a remove memory dump request is in progress", current.ClaimName)
		case kubevirt.MemoryDumpCompleted, kubevirt.MemoryDumpFailed:
		default:
			return "", conflict(vm.Name, "memory dump request for pvc [%s] already in progress", current.ClaimName)
		}
		if claim != "" && claim != current.ClaimName {
			return "", conflict(vm.Name, "can't request memory dump for pvc [%s] while pvc [%s] is still associated as the memory dump pvc", claim, current.ClaimName)
		}
		return current.ClaimName, nil
	}
	if claim == "" {
		return "", invalidVM(vm.Name, field.Required(field.NewPath("claimName"), "the claim the memory dump goes to"))
	}
	if msgs := utilvalidation.IsDNS1123Label(claim); len(msgs) > 0 {
		// The claim's name is the instance's volume's, which is a DNS label.
		return "", invalidVM(vm.Name, field.Invalid(field.NewPath("claimName"), claim, msgs[0]))
	}
	return claim, nil
}

// checkMemoryDumpClaim refuses a claim the dump cannot go to: one that does not exist or that
// an instance uses, a block claim, a read-only one, or one too small for the guest's memory.
func (a *Actions) checkMemoryDumpClaim(ctx context.Context, name, claimName string, vmi *kubevirt.VirtualMachineInstance) error {
	path := field.NewPath("claimName")
	claim, err := a.instanceVolumes.CheckClaim(ctx, kubevirt.Kind("VirtualMachine"), name, path, claimName, true)
	if err != nil || claim == nil {
		return err // nil, nil standalone: no claims to look at
	}
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return invalidVM(name, field.Invalid(path, claimName, "a memory dump goes to a file system claim, not a block claim"))
	}
	if len(claim.Spec.AccessModes) == 1 && claim.Spec.AccessModes[0] == corev1.ReadOnlyMany {
		return invalidVM(name, field.Invalid(path, claimName, "the claim is read-only"))
	}
	need, err := memoryDumpSize(vmi)
	if err != nil {
		return err
	}
	size := claim.Status.Capacity[corev1.ResourceStorage]
	if size.IsZero() {
		size = claim.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	if size.Cmp(need) < 0 {
		return invalidVM(name, field.Invalid(path, claimName, fmt.Sprintf(
			"the claim's %s is less than the %s the dump needs (the guest's memory, 100Mi, and 5.5%% for the file system)", size.String(), need.String())))
	}
	return nil
}

// memoryDumpSize is the claim size a dump of vmi's guest needs.
func memoryDumpSize(vmi *kubevirt.VirtualMachineInstance) (resource.Quantity, error) {
	domain := v1.DomainSpec{}
	if err := v1.Convert_kubevirt_DomainSpec_To_v1_DomainSpec(&vmi.Spec.Domain, &domain, nil); err != nil {
		return resource.Quantity{}, apierrors.NewInternalError(err)
	}
	return v1.MemoryDumpClaimSize(&domain), nil
}
