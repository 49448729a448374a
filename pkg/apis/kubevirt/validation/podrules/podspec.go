// Package podrules checks values that an instance hands to its launcher pod the way the pod
// API (k8s.io/kubernetes pkg/apis/core/validation, which the main module cannot import) and
// the kubelet would, so a value they refuse is refused when the instance is created, with
// the instance's field path, instead of leaving it Pending with an event. Each check names
// the pod rule it mirrors. ValidatePod applies them, and the pod API's structural rules, to
// a whole launcher pod: the fuzz tests hold the pod builder to them.
package podrules

import (
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedTolerationOperators = sets.New(corev1.TolerationOpExists, corev1.TolerationOpEqual)
	supportedTaintEffects        = sets.New(corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)
	supportedPullPolicies        = sets.New(corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent)
)

// ValidateTolerations mirrors the pod API's ValidateTolerations.
func ValidateTolerations(tolerations []corev1.Toleration, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		idx := path.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, idx.Child("key"))...)
		}
		// An empty key with Exists matches every taint; an empty key with Equal matches none.
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idx.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idx.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "": // empty means Equal
			for _, msg := range utilvalidation.IsValidLabelValue(t.Value) {
				allErrs = append(allErrs, field.Invalid(idx.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(idx.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(idx.Child("operator"), t.Operator, sets.List(supportedTolerationOperators)))
		}
		if t.Effect != "" && !supportedTaintEffects.Has(t.Effect) { // validateTaintEffect, empty allowed
			allErrs = append(allErrs, field.NotSupported(idx.Child("effect"), t.Effect, sets.List(supportedTaintEffects)))
		}
	}
	return allErrs
}

// ValidateNodeSelector mirrors the pod API's nodeSelector rule: labels.
func ValidateNodeSelector(selector map[string]string, path *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(selector, path)
}

// ValidatePriorityClassName mirrors the pod API's rule: ValidatePriorityClassName, a DNS
// subdomain (the name of a PriorityClass).
func ValidatePriorityClassName(name string, path *field.Path) field.ErrorList {
	return dnsSubdomain(name, path)
}

// ValidateSchedulerName mirrors the pod API's rule: a DNS subdomain.
func ValidateSchedulerName(name string, path *field.Path) field.ErrorList {
	return dnsSubdomain(name, path)
}

// ValidateHostname mirrors the pod API's hostname and subdomain rule: a DNS label each.
func ValidateHostname(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		allErrs = append(allErrs, field.Invalid(path, name, msg))
	}
	return allErrs
}

// ValidateImage mirrors the pod API's container image rule (required, no leading or trailing
// whitespace) and the kubelet's: an image its reference parser (ParseNormalizedNamed, as
// k8s.io/kubernetes pkg/util/parsers.ParseImageName) cannot read leaves the container
// waiting in InvalidImageName forever.
func ValidateImage(image string, path *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if image != strings.TrimSpace(image) {
		return field.ErrorList{field.Invalid(path, image, "must not have leading or trailing whitespace")}
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return field.ErrorList{field.Invalid(path, image, "is not a container image reference: "+err.Error())}
	}
	return nil
}

// ValidatePullPolicy mirrors the pod API's imagePullPolicy rule; empty is defaulted.
func ValidatePullPolicy(policy corev1.PullPolicy, path *field.Path) field.ErrorList {
	if policy != "" && !supportedPullPolicies.Has(policy) {
		return field.ErrorList{field.NotSupported(path, policy, sets.List(supportedPullPolicies))}
	}
	return nil
}

// ValidateObjectName checks a reference to a Secret or a PersistentVolumeClaim by name: a
// DNS subdomain, as every such object's name is. The pod API takes any non-empty string
// there; a name no object can have only fails later, on the node.
func ValidateObjectName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return dnsSubdomain(name, path)
}

func dnsSubdomain(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
		allErrs = append(allErrs, field.Invalid(path, name, msg))
	}
	return allErrs
}
