package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// ValidateVirtualMachineLocks refuses the spec changes a snapshot or a restore of the VM in
// progress forbids, with KubeVirt's messages: during a restore, which rewrites the spec and
// the disks, any change that leaves the VM to run; during a snapshot, a change of its
// volumes or of whether it runs. vm and old are as the user wrote them, not expanded.
func ValidateVirtualMachineLocks(vm, old *kubevirt.VirtualMachine) field.ErrorList {
	path := field.NewPath("spec")
	var allErrs field.ErrorList
	if restore := old.Status.RestoreInProgress; restore != nil && !apiequality.Semantic.DeepEqual(vm.Spec, old.Spec) &&
		vm.Spec.EffectiveRunStrategy() != kubevirt.RunStrategyHalted {
		allErrs = append(allErrs, field.Forbidden(path, RestoreLockMessage(*restore)))
	}
	if snapshot := old.Status.SnapshotInProgress; snapshot != nil {
		if !apiequality.Semantic.DeepEqual(templateVolumes(vm), templateVolumes(old)) {
			allErrs = append(allErrs, field.Forbidden(path.Child("template", "spec", "volumes"),
				fmt.Sprintf("Cannot update vm disks or volumes until snapshot %q completes", *snapshot)))
		}
		// As KubeVirt: switching between running and runStrategy is a change too.
		if !apiequality.Semantic.DeepEqual(vm.Spec.Running, old.Spec.Running) ||
			!apiequality.Semantic.DeepEqual(vm.Spec.RunStrategy, old.Spec.RunStrategy) {
			allErrs = append(allErrs, field.Forbidden(path,
				fmt.Sprintf("Cannot update vm running state until snapshot %q completes", *snapshot)))
		}
	}
	return allErrs
}

// RestoreLockMessage is KubeVirt's refusal of a start while restore runs: by an edit of the
// spec or by the start subresource.
func RestoreLockMessage(restore string) string {
	return fmt.Sprintf("Cannot start VM until restore %q completes", restore)
}

func templateVolumes(vm *kubevirt.VirtualMachine) []kubevirt.Volume {
	if vm.Spec.Template == nil {
		return nil
	}
	return vm.Spec.Template.Spec.Volumes
}
