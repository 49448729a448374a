// Package validation checks kubevirt.io objects (internal versions) and reports every problem
// as a field.Error with its full path, so a client sees all of them in one 422.
package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// Object names become guest hostnames and launcher pod labels, so they must be DNS labels.
var validateName = apimachineryvalidation.NameIsDNSLabel

var supportedRunStrategies = sets.New(
	kubevirt.RunStrategyAlways, kubevirt.RunStrategyHalted, kubevirt.RunStrategyManual,
	kubevirt.RunStrategyRerunOnFailure, kubevirt.RunStrategyOnce,
)

// ValidateVirtualMachine validates a VirtualMachine on create.
func ValidateVirtualMachine(vm *kubevirt.VirtualMachine) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&vm.ObjectMeta, true, validateName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateVirtualMachineSpec(&vm.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateDataVolumeTemplates(vm, field.NewPath("spec", "dataVolumeTemplates"))...)
}

// ValidateVirtualMachineUpdate validates a VirtualMachine spec update; the template may
// change freely and takes effect at the next start.
func ValidateVirtualMachineUpdate(vm, old *kubevirt.VirtualMachine) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&vm.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateVirtualMachineSpec(&vm.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateDataVolumeTemplates(vm, field.NewPath("spec", "dataVolumeTemplates"))...)
}

func validateVirtualMachineSpec(spec *kubevirt.VirtualMachineSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Running != nil && spec.RunStrategy != nil {
		allErrs = append(allErrs, field.Invalid(path.Child("running"), *spec.Running,
			"running and runStrategy are mutually exclusive; use runStrategy"))
	}
	if spec.RunStrategy != nil && !supportedRunStrategies.Has(*spec.RunStrategy) {
		allErrs = append(allErrs, field.NotSupported(path.Child("runStrategy"), *spec.RunStrategy, sets.List(supportedRunStrategies)))
	}
	if spec.Template == nil {
		return append(allErrs, field.Required(path.Child("template"), "a VirtualMachine needs a template for its instance"))
	}
	return append(allErrs, validateTemplate(spec.Template, path.Child("template"))...)
}

// ValidateVirtualMachineStatusUpdate validates what the controller writes to a VM's status.
func ValidateVirtualMachineStatusUpdate(vm, old *kubevirt.VirtualMachine) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&vm.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	path := field.NewPath("status")
	for i, req := range vm.Status.StateChangeRequests {
		if req.Action != kubevirt.StartRequest && req.Action != kubevirt.StopRequest {
			allErrs = append(allErrs, field.NotSupported(path.Child("stateChangeRequests").Index(i).Child("action"),
				req.Action, []kubevirt.StateChangeRequestAction{kubevirt.StartRequest, kubevirt.StopRequest}))
		}
	}
	for i, c := range vm.Status.Conditions {
		allErrs = append(allErrs, validateConditionStatus(c.Status, path.Child("conditions").Index(i).Child("status"))...)
	}
	return allErrs
}

// ValidateVirtualMachineInstance validates a VirtualMachineInstance on create.
func ValidateVirtualMachineInstance(vmi *kubevirt.VirtualMachineInstance) field.ErrorList {
	allErrs := validateVirtualMachineInstance(vmi)
	return append(allErrs, forbidMemoryDumps(&vmi.Spec, field.NewPath("spec"))...)
}

// validateVirtualMachineInstance validates an instance as it may be at any time.
func validateVirtualMachineInstance(vmi *kubevirt.VirtualMachineInstance) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&vmi.ObjectMeta, true, validateName, field.NewPath("metadata"))
	return append(allErrs, ValidateVirtualMachineInstanceSpec(&vmi.Spec, field.NewPath("spec"))...)
}

// forbidMemoryDumps refuses memory dump volumes in a spec written by hand: only the VM's
// memorydump action adds one, to a running instance.
func forbidMemoryDumps(spec *kubevirt.VirtualMachineInstanceSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, v := range spec.Volumes {
		if v.MemoryDump != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("volumes").Index(i).Child("memoryDump"),
				"memory dump volumes are added by the VM's memorydump action (virtctl memory-dump get)"))
		}
	}
	return allErrs
}

// ValidateVirtualMachineInstanceUpdate rejects spec changes: a running guest's hardware is
// fixed at creation, as KubeVirt's is. Metadata (labels, annotations, finalizers) may change,
// and so may the termination grace period, which a stop with a shorter one sets.
func ValidateVirtualMachineInstanceUpdate(vmi, old *kubevirt.VirtualMachineInstance) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&vmi.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	oldSpec := old.Spec.DeepCopy()
	oldSpec.TerminationGracePeriodSeconds = vmi.Spec.TerminationGracePeriodSeconds
	if vmi.Spec.TerminationGracePeriodSeconds != nil {
		allErrs = append(allErrs, validateGracePeriod(*vmi.Spec.TerminationGracePeriodSeconds,
			field.NewPath("spec", "terminationGracePeriodSeconds"))...)
	}
	if !apiequality.Semantic.DeepEqual(vmi.Spec, *oldSpec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "the spec of a VirtualMachineInstance cannot change after creation"))
	}
	return allErrs
}

var supportedPhases = sets.New(
	kubevirt.VmPhaseUnset, kubevirt.Pending, kubevirt.Scheduling, kubevirt.Scheduled,
	kubevirt.Running, kubevirt.Succeeded, kubevirt.Failed, kubevirt.Unknown,
)

// ValidateVirtualMachineInstanceStatusUpdate validates what the controller and the node agent
// write to an instance's status. A final phase is final.
func ValidateVirtualMachineInstanceStatusUpdate(vmi, old *kubevirt.VirtualMachineInstance) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&vmi.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	path := field.NewPath("status")
	if !supportedPhases.Has(vmi.Status.Phase) {
		allErrs = append(allErrs, field.NotSupported(path.Child("phase"), vmi.Status.Phase, sets.List(supportedPhases)))
	}
	if isFinal(old.Status.Phase) && vmi.Status.Phase != old.Status.Phase {
		allErrs = append(allErrs, field.Forbidden(path.Child("phase"),
			fmt.Sprintf("cannot leave the final phase %s", old.Status.Phase)))
	}
	for i, c := range vmi.Status.Conditions {
		allErrs = append(allErrs, validateConditionStatus(c.Status, path.Child("conditions").Index(i).Child("status"))...)
	}
	return append(allErrs, validateMigrationStatusFields(&vmi.Status, path)...)
}

func isFinal(phase kubevirt.VirtualMachineInstancePhase) bool {
	return phase == kubevirt.Succeeded || phase == kubevirt.Failed
}

// ValidateVirtualMachineInstanceReplicaSet validates a replica set on create.
func ValidateVirtualMachineInstanceReplicaSet(rs *kubevirt.VirtualMachineInstanceReplicaSet) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&rs.ObjectMeta, true, validateName, field.NewPath("metadata"))
	return append(allErrs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

// ValidateVirtualMachineInstanceReplicaSetUpdate validates a replica set spec update.
func ValidateVirtualMachineInstanceReplicaSetUpdate(rs, old *kubevirt.VirtualMachineInstanceReplicaSet) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

// ValidateVirtualMachineInstanceReplicaSetStatusUpdate validates a replica set's status.
func ValidateVirtualMachineInstanceReplicaSetStatusUpdate(rs, old *kubevirt.VirtualMachineInstanceReplicaSet) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	path := field.NewPath("status")
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(rs.Status.Replicas), path.Child("replicas"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(rs.Status.ReadyReplicas), path.Child("readyReplicas"))...)
	if rs.Status.ReadyReplicas > rs.Status.Replicas {
		allErrs = append(allErrs, field.Invalid(path.Child("readyReplicas"), rs.Status.ReadyReplicas, "cannot exceed status.replicas"))
	}
	for i, c := range rs.Status.Conditions {
		allErrs = append(allErrs, validateConditionStatus(c.Status, path.Child("conditions").Index(i).Child("status"))...)
	}
	return allErrs
}

func validateReplicaSetSpec(spec *kubevirt.VirtualMachineInstanceReplicaSetSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Replicas != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(*spec.Replicas), path.Child("replicas"))...)
	}
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(path.Child("selector"), "a replica set needs a selector"))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector,
			metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(path.Child("selector"), spec.Selector, "an empty selector would select every instance"))
		}
	}
	if spec.Template == nil {
		return append(allErrs, field.Required(path.Child("template"), "a replica set needs a template for its instances"))
	}
	allErrs = append(allErrs, validateTemplate(spec.Template, path.Child("template"))...)
	if spec.Selector != nil {
		selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
		if err == nil && !selector.Matches(labels.Set(spec.Template.ObjectMeta.Labels)) {
			allErrs = append(allErrs, field.Invalid(path.Child("template", "metadata", "labels"),
				spec.Template.ObjectMeta.Labels, "`selector` does not match template `labels`"))
		}
	}
	return allErrs
}

func validateTemplate(tmpl *kubevirt.VirtualMachineInstanceTemplateSpec, path *field.Path) field.ErrorList {
	metaPath := path.Child("metadata")
	allErrs := metav1validation.ValidateLabels(tmpl.ObjectMeta.Labels, metaPath.Child("labels"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(tmpl.ObjectMeta.Annotations, metaPath.Child("annotations"))...)
	allErrs = append(allErrs, forbidMemoryDumps(&tmpl.Spec, path.Child("spec"))...)
	return append(allErrs, ValidateVirtualMachineInstanceSpec(&tmpl.Spec, path.Child("spec"))...)
}

func validateConditionStatus(status corev1.ConditionStatus, path *field.Path) field.ErrorList {
	switch status {
	case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		return nil
	}
	return field.ErrorList{field.NotSupported(path, status,
		[]corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown})}
}
