// Package migratable decides whether an instance can be live migrated and how: the
// LiveMigratable condition (KubeVirt's reasons and messages) and the migration method. It is
// a pure function of the instance's spec and of its claims' access modes, so virt-controller
// computes it once per status write and virt-api and tests can ask the same question.
package migratable

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Result is the verdict on one instance.
type Result struct {
	// Status is True or False.
	Status corev1.ConditionStatus
	// Reason and Message say why not, when Status is False.
	Reason, Message string
	// Method is how a migration would move the instance: LiveMigration when every disk is on
	// shared storage, BlockMigration when some disk is local to the node and is copied.
	Method v1.VirtualMachineInstanceMigrationMethod
}

// Condition is the LiveMigratable condition of the result (no timestamps).
func (r Result) Condition() v1.VirtualMachineInstanceCondition {
	return v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceIsMigratable,
		Status: r.Status, Reason: r.Reason, Message: r.Message}
}

// AccessModes returns the access modes of a claim of the instance's namespace; found is
// false when the claim does not exist.
type AccessModes func(claimName string) (modes []corev1.PersistentVolumeAccessMode, found bool)

// Evaluate decides whether the instance can be live migrated. Interfaces are checked first,
// then volumes in spec order, so the reason is stable from one status write to the next.
func Evaluate(spec *v1.VirtualMachineInstanceSpec, claims AccessModes) Result {
	if msg := interfaceProblem(spec); msg != "" {
		return Result{Status: corev1.ConditionFalse, Reason: v1.VirtualMachineInstanceReasonInterfaceNotMigratable, Message: msg}
	}
	if msg := stateProblem(spec); msg != "" {
		return Result{Status: corev1.ConditionFalse, Reason: v1.VirtualMachineInstanceReasonNotMigratable, Message: msg}
	}
	method := v1.LiveMigration
	for _, vol := range spec.Volumes {
		switch {
		case vol.ClaimSource() != nil: // a persistentVolumeClaim, or a dataVolume's claim
			name := vol.ClaimSource().ClaimName
			modes, found := claims(name)
			if !found {
				return notMigratableDisks(fmt.Sprintf("cannot migrate VMI: PVC %s does not exist", name))
			}
			if !slices.Contains(modes, corev1.ReadWriteMany) {
				// A claim that only one node can mount cannot be open on both nodes during
				// the hand-off, and copying it would change what the claim holds.
				return notMigratableDisks(fmt.Sprintf("cannot migrate VMI: PVC %s is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)", name))
			}
		case vol.ContainerDisk != nil, vol.EmptyDisk != nil, vol.CloudInitNoCloud != nil:
			// Node-local copies: the target gets its own, and QEMU copies the contents.
			method = v1.BlockMigration
		default:
			return Result{Status: corev1.ConditionFalse, Reason: v1.VirtualMachineInstanceReasonNotMigratable,
				Message: fmt.Sprintf("cannot migrate VMI: volume %s has a type that cannot be migrated", vol.Name)}
		}
	}
	if spec.Domain.Firmware != nil && spec.Domain.Firmware.KernelBoot != nil {
		// The kernel and initrd come from an image each node pulls for itself, like a
		// container disk: the issue counts such a guest as block migration.
		method = v1.BlockMigration
	}
	return Result{Status: corev1.ConditionTrue, Method: method}
}

func notMigratableDisks(msg string) Result {
	return Result{Status: corev1.ConditionFalse, Reason: v1.VirtualMachineInstanceReasonDisksNotMigratable, Message: msg}
}

// stateProblem refuses what keeps device state outside the guest's memory and disks: a TPM
// (swtpm's state would have to move with QEMU's, which no test of Hangar's carries out yet)
// and EFI variables on the VM's state claim (source and target launcher would share one
// claim; KubeVirt needs it ReadWriteMany, Hangar does not try it yet). A guest with
// non-persistent EFI variables migrates: the target starts from the firmware's template.
func stateProblem(spec *v1.VirtualMachineInstanceSpec) string {
	switch {
	case spec.HasTPM():
		return "cannot migrate VMI: it has a TPM device, whose state Hangar does not migrate"
	case spec.PersistentEFI():
		return "cannot migrate VMI: its EFI variables are persistent, on a state claim Hangar does not migrate"
	}
	return ""
}

// interfaceProblem refuses the bridge binding on the pod network: the guest holds the pod's
// address itself, and the target pod has another one.
func interfaceProblem(spec *v1.VirtualMachineInstanceSpec) string {
	podNetworks := map[string]bool{}
	for _, n := range spec.Networks {
		if n.Pod != nil {
			podNetworks[n.Name] = true
		}
	}
	for _, iface := range spec.Domain.Devices.Interfaces {
		if podNetworks[iface.Name] && iface.Bridge != nil {
			return "cannot migrate VMI which does not use masquerade or a migratable plugin to connect to the pod network"
		}
	}
	return ""
}
