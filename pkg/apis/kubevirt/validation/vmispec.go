package validation

import (
	"fmt"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation/podrules"
)

var supportedEvictions = sets.New(kubevirt.EvictionStrategyNone, kubevirt.EvictionStrategyLiveMigrate,
	kubevirt.EvictionStrategyLiveMigrateIfPossible, kubevirt.EvictionStrategyExternal)

// ValidateVirtualMachineInstanceSpec validates a guest's specification, for instances and for
// the templates of VMs and replica sets alike; path is where the spec is (spec, or
// spec.template.spec), so every error names the field as the user wrote it.
func ValidateVirtualMachineInstanceSpec(spec *kubevirt.VirtualMachineInstanceSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateDomain(&spec.Domain, path.Child("domain"))...)
	allErrs = append(allErrs, validateDevices(spec, path)...)
	allErrs = append(allErrs, validateLauncherPodFields(spec, path)...)
	if spec.EvictionStrategy != nil && !supportedEvictions.Has(*spec.EvictionStrategy) {
		allErrs = append(allErrs, field.NotSupported(path.Child("evictionStrategy"), *spec.EvictionStrategy, sets.List(supportedEvictions)))
	}
	if spec.TerminationGracePeriodSeconds != nil {
		allErrs = append(allErrs, validateGracePeriod(*spec.TerminationGracePeriodSeconds, path.Child("terminationGracePeriodSeconds"))...)
	}
	if spec.StartStrategy != nil && *spec.StartStrategy != kubevirt.StartStrategyPaused {
		allErrs = append(allErrs, field.NotSupported(path.Child("startStrategy"), *spec.StartStrategy,
			[]kubevirt.StartStrategy{kubevirt.StartStrategyPaused}))
	}
	return allErrs
}

// validateLauncherPodFields checks what the launcher pod copies from the spec as the pod API
// would check it on the pod, so the answer comes now, at the instance's path.
func validateLauncherPodFields(spec *kubevirt.VirtualMachineInstanceSpec, path *field.Path) field.ErrorList {
	allErrs := podrules.ValidateHostname(spec.Hostname, path.Child("hostname"))
	allErrs = append(allErrs, podrules.ValidateHostname(spec.Subdomain, path.Child("subdomain"))...)
	allErrs = append(allErrs, podrules.ValidateNodeSelector(spec.NodeSelector, path.Child("nodeSelector"))...)
	allErrs = append(allErrs, podrules.ValidateAffinity(spec.Affinity, path.Child("affinity"))...)
	allErrs = append(allErrs, podrules.ValidateTolerations(spec.Tolerations, path.Child("tolerations"))...)
	allErrs = append(allErrs, podrules.ValidatePriorityClassName(spec.PriorityClassName, path.Child("priorityClassName"))...)
	return append(allErrs, podrules.ValidateSchedulerName(spec.SchedulerName, path.Child("schedulerName"))...)
}

// validateGracePeriod: non-negative, as a pod's, and at most MaxTerminationGracePeriodSeconds.
func validateGracePeriod(seconds int64, path *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateNonnegativeField(seconds, path)
	if seconds > MaxTerminationGracePeriodSeconds {
		allErrs = append(allErrs, field.Invalid(path, seconds,
			fmt.Sprintf("must be at most %d (one year)", MaxTerminationGracePeriodSeconds)))
	}
	return allErrs
}

// validateMemberName checks a list member's name is set, a DNS label and unique in its list.
func validateMemberName(name string, seen sets.Set[string], path *field.Path, allErrs *field.ErrorList) bool {
	if name == "" {
		*allErrs = append(*allErrs, field.Required(path, ""))
		return false
	}
	if seen.Has(name) {
		*allErrs = append(*allErrs, field.Duplicate(path, name))
		return false
	}
	seen.Insert(name)
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		*allErrs = append(*allErrs, field.Invalid(path, name, msg))
	}
	return true
}
