package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// The checks of a migration that need nothing but the object. What needs the instance (it
// exists, runs, is migratable, has no other migration in flight) is checked by the registry
// at create time (pkg/registry/virtualmachineinstancemigration).

var supportedMigrationPhases = sets.New(
	kubevirt.MigrationPhaseUnset, kubevirt.MigrationPending, kubevirt.MigrationScheduling,
	kubevirt.MigrationScheduled, kubevirt.MigrationPreparingTarget, kubevirt.MigrationTargetReady,
	kubevirt.MigrationRunning, kubevirt.MigrationSucceeded, kubevirt.MigrationFailed,
)

var supportedMigrationMethods = sets.New(kubevirt.BlockMigration, kubevirt.LiveMigration)

var supportedMigrationModes = sets.New(kubevirt.MigrationPreCopy, kubevirt.MigrationPostCopy, kubevirt.MigrationPaused)

var supportedAbortStatuses = sets.New(kubevirt.MigrationAbortSucceeded, kubevirt.MigrationAbortFailed, kubevirt.MigrationAbortInProgress)

// ValidateVirtualMachineInstanceMigration validates a migration on create. Migration names
// are not hostnames, so any DNS subdomain goes (KubeVirt's generated names are long).
func ValidateVirtualMachineInstanceMigration(m *kubevirt.VirtualMachineInstanceMigration) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&m.ObjectMeta, true,
		apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateMigrationSpec(&m.Spec, field.NewPath("spec"))...)
}

func validateMigrationSpec(spec *kubevirt.VirtualMachineInstanceMigrationSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.VMIName == "" {
		allErrs = append(allErrs, field.Required(path.Child("vmiName"), "vmiName is missing"))
	} else {
		for _, msg := range validateName(spec.VMIName, false) {
			allErrs = append(allErrs, field.Invalid(path.Child("vmiName"), spec.VMIName, msg))
		}
	}
	// The selector is added to the target pod's node selector: it must be a valid one.
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.AddedNodeSelector, path.Child("addedNodeSelector"))...)
	return allErrs
}

// ValidateVirtualMachineInstanceMigrationUpdate validates an update through the main
// resource: the spec is immutable, and the selector label (how clients find an instance's
// migrations) may not change while the migration is in flight.
func ValidateVirtualMachineInstanceMigrationUpdate(m, old *kubevirt.VirtualMachineInstanceMigration) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&m.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if !apiequality.Semantic.DeepEqual(m.Spec, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "update of Migration object's spec is restricted"))
	}
	return append(allErrs, validateSelectorLabelKept(m, old)...)
}

func validateSelectorLabelKept(m, old *kubevirt.VirtualMachineInstanceMigration) field.ErrorList {
	if m.IsFinal() {
		return nil
	}
	oldValue, had := old.Labels[v1.MigrationSelectorLabel]
	value, has := m.Labels[v1.MigrationSelectorLabel]
	if had && (!has || value != oldValue) {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "labels").Key(v1.MigrationSelectorLabel),
			"selector label can't be modified on an in-flight migration")}
	}
	return nil
}

// ValidateVirtualMachineInstanceMigrationStatusUpdate validates what the controller writes to
// a migration's status. A final phase is final.
func ValidateVirtualMachineInstanceMigrationStatusUpdate(m, old *kubevirt.VirtualMachineInstanceMigration) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&m.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSelectorLabelKept(m, old)...)
	path := field.NewPath("status")
	if !supportedMigrationPhases.Has(m.Status.Phase) {
		allErrs = append(allErrs, field.NotSupported(path.Child("phase"), m.Status.Phase, sets.List(supportedMigrationPhases)))
	}
	if old.IsFinal() && m.Status.Phase != old.Status.Phase {
		allErrs = append(allErrs, field.Forbidden(path.Child("phase"),
			fmt.Sprintf("cannot leave the final phase %s", old.Status.Phase)))
	}
	for i, c := range m.Status.Conditions {
		allErrs = append(allErrs, validateConditionStatus(c.Status, path.Child("conditions").Index(i).Child("status"))...)
	}
	return append(allErrs, validateMigrationState(m.Status.MigrationState, path.Child("migrationState"))...)
}

// validateMigrationStatusFields checks the migration fields of an instance's status.
func validateMigrationStatusFields(status *kubevirt.VirtualMachineInstanceStatus, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if status.MigrationMethod != "" && !supportedMigrationMethods.Has(status.MigrationMethod) {
		allErrs = append(allErrs, field.NotSupported(path.Child("migrationMethod"), status.MigrationMethod, sets.List(supportedMigrationMethods)))
	}
	if n := status.EvacuationNodeName; n != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(n, false) {
			allErrs = append(allErrs, field.Invalid(path.Child("evacuationNodeName"), n, msg))
		}
	}
	return append(allErrs, validateMigrationState(status.MigrationState, path.Child("migrationState"))...)
}

func validateMigrationState(s *kubevirt.VirtualMachineInstanceMigrationState, path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var allErrs field.ErrorList
	if s.Mode != "" && !supportedMigrationModes.Has(s.Mode) {
		allErrs = append(allErrs, field.NotSupported(path.Child("mode"), s.Mode, sets.List(supportedMigrationModes)))
	}
	if s.AbortStatus != "" && !supportedAbortStatuses.Has(s.AbortStatus) {
		allErrs = append(allErrs, field.NotSupported(path.Child("abortStatus"), s.AbortStatus, sets.List(supportedAbortStatuses)))
	}
	if s.Completed && s.Failed {
		allErrs = append(allErrs, field.Invalid(path.Child("failed"), s.Failed, "a migration cannot both complete and fail"))
	}
	return allErrs
}
