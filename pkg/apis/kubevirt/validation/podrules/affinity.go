package podrules

import (
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateAffinity mirrors the pod API's validateAffinity (k8s.io/kubernetes
// pkg/apis/core/validation) for a new pod: node affinity, pod affinity and pod anti-affinity.
func ValidateAffinity(a *corev1.Affinity, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var allErrs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		naPath := path.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			allErrs = append(allErrs, validateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution,
				naPath.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		// ValidatePreferredSchedulingTerms: weights 1-100; a preference may name label values
		// no node can carry (the pod API allows invalid values there).
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			idx := naPath.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			allErrs = append(allErrs, validateWeight(term.Weight, idx.Child("weight"))...)
			allErrs = append(allErrs, validateNodeSelectorTerm(term.Preference, true, idx.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution,
			pa.PreferredDuringSchedulingIgnoredDuringExecution, path.Child("podAffinity"))...)
	}
	if paa := a.PodAntiAffinity; paa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(paa.RequiredDuringSchedulingIgnoredDuringExecution,
			paa.PreferredDuringSchedulingIgnoredDuringExecution, path.Child("podAntiAffinity"))...)
	}
	return allErrs
}

// validateNodeSelector mirrors ValidateNodeSelector: at least one term.
func validateNodeSelector(s *corev1.NodeSelector, path *field.Path) field.ErrorList {
	termsPath := path.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var allErrs field.ErrorList
	for i, term := range s.NodeSelectorTerms {
		allErrs = append(allErrs, validateNodeSelectorTerm(term, false, termsPath.Index(i))...)
	}
	return allErrs
}

// validateNodeSelectorTerm mirrors ValidateNodeSelectorTerm and ValidateNodeSelectorRequirement
// (label keys, operators and the values each operator needs) and
// ValidateNodeFieldSelectorRequirement (only metadata.name, In or NotIn, one node name).
func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, allowInvalidValues bool, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for j, req := range term.MatchExpressions {
		idx := path.Child("matchExpressions").Index(j)
		switch req.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(req.Values) == 0 {
				allErrs = append(allErrs, field.Required(idx.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(req.Values) > 0 {
				allErrs = append(allErrs, field.Forbidden(idx.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(req.Values) != 1 {
				allErrs = append(allErrs, field.Required(idx.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			allErrs = append(allErrs, field.Invalid(idx.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelName(req.Key, idx.Child("key"))...)
		if !allowInvalidValues {
			for k, v := range req.Values {
				for _, msg := range utilvalidation.IsValidLabelValue(v) {
					allErrs = append(allErrs, field.Invalid(idx.Child("values").Index(k), v, msg))
				}
			}
		}
	}
	for j, req := range term.MatchFields {
		idx := path.Child("matchFields").Index(j)
		switch req.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(req.Values) != 1 {
				allErrs = append(allErrs, field.Required(idx.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			allErrs = append(allErrs, field.Invalid(idx.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		if req.Key != metav1.ObjectNameField {
			allErrs = append(allErrs, field.Invalid(idx.Child("key"), req.Key, "not a valid field selector key"))
			continue
		}
		for k, v := range req.Values {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(v, false) { // ValidateNodeName
				allErrs = append(allErrs, field.Invalid(idx.Child("values").Index(k), v, msg))
			}
		}
	}
	return allErrs
}

// validatePodAffinityTerms mirrors validatePodAffinity and validatePodAntiAffinity, which
// differ only in their path.
func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, term := range required {
		allErrs = append(allErrs, validatePodAffinityTerm(term, path.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, term := range preferred {
		idx := path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		allErrs = append(allErrs, validateWeight(term.Weight, idx.Child("weight"))...)
		allErrs = append(allErrs, validatePodAffinityTerm(term.PodAffinityTerm, idx.Child("podAffinityTerm"))...)
	}
	return allErrs
}

// validatePodAffinityTerm mirrors validatePodAffinityTerm: selectors, namespace names, a
// topology key, and validateMatchLabelKeysAndMismatchLabelKeys.
func validatePodAffinityTerm(term corev1.PodAffinityTerm, path *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	allErrs := metav1validation.ValidateLabelSelector(term.LabelSelector, opts, path.Child("labelSelector"))
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, opts, path.Child("namespaceSelector"))...)
	for i, ns := range term.Namespaces {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns, false) {
			allErrs = append(allErrs, field.Invalid(path.Child("namespaces").Index(i), ns, msg))
		}
	}
	allErrs = append(allErrs, validateLabelKeys(term.MatchLabelKeys, term.LabelSelector, path.Child("matchLabelKeys"))...)
	allErrs = append(allErrs, validateLabelKeys(term.MismatchLabelKeys, term.LabelSelector, path.Child("mismatchLabelKeys"))...)
	// The API server merges matchLabelKeys into the selector before it validates the pod and
	// then refuses a key the selector had already. The instance's labels (the pod's) decide
	// whether there is anything to merge; refusing the overlap outright keeps the answer
	// independent of them, and such a selector could not filter further anyway.
	if term.LabelSelector != nil {
		inSelector := sets.New[string]()
		for k := range term.LabelSelector.MatchLabels {
			inSelector.Insert(k)
		}
		for _, e := range term.LabelSelector.MatchExpressions {
			inSelector.Insert(e.Key)
		}
		for i, k := range term.MatchLabelKeys {
			if inSelector.Has(k) {
				allErrs = append(allErrs, field.Invalid(path.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and labelSelector"))
			}
		}
	}
	mismatch := sets.New(term.MismatchLabelKeys...)
	for i, k := range term.MatchLabelKeys {
		if mismatch.Has(k) {
			allErrs = append(allErrs, field.Invalid(path.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	if term.TopologyKey == "" {
		return append(allErrs, field.Required(path.Child("topologyKey"), "can not be empty"))
	}
	return append(allErrs, metav1validation.ValidateLabelName(term.TopologyKey, path.Child("topologyKey"))...)
}

// validateLabelKeys mirrors validateLabelKeys: label names, and only with a label selector.
func validateLabelKeys(keys []string, selector *metav1.LabelSelector, path *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if selector == nil {
		return field.ErrorList{field.Forbidden(path, "must not be specified when labelSelector is not set")}
	}
	var allErrs field.ErrorList
	for i, k := range keys {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(k, path.Index(i))...)
	}
	return allErrs
}

func validateWeight(w int32, path *field.Path) field.ErrorList {
	if w <= 0 || w > 100 {
		return field.ErrorList{field.Invalid(path, w, "must be in the range 1-100")}
	}
	return nil
}
