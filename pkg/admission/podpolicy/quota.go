package podpolicy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The ResourceQuota check follows kube-apiserver's quota admission for a pod create:
//   - a quota applies when every scope it names (spec.scopes, spec.scopeSelector) matches
//     the pod;
//   - a quota that limits cpu or memory requires every container (init containers too) to
//     state the request or limit it limits: "failed quota: NAME: must specify limits.memory";
//   - the pod's usage plus status.used must stay within the hard limits:
//     "exceeded quota: NAME, requested: ..., used: ..., limited: ...".
//
// The hard limits are taken from spec.hard, what the quota will enforce once its controller
// has caught up; kube-apiserver uses status.hard, and refuses every pod for as long as the
// quota controller has not filled it in, which is transient and not reported here. What is
// used comes from status.used (nothing when it is not filled in yet). The check is racy by
// nature: other pods come and go between now and the launcher pod's creation. It catches
// what is already certain to fail; kube-apiserver's quota admission still decides for real.
//
// Not modelled: kube-apiserver's limitedResources configuration ("insufficient quota to
// consume"), which virt-api cannot see, and the priority class the Priority admission plugin
// fills in from a globalDefault PriorityClass (a launcher pod without priorityClassName is
// matched as having none).

// quotaConstrained are the resources for which a quota demands that every container states
// its request or limit (kube's backward-compatible rule for cpu and memory only).
var quotaConstrained = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
)

// podQuotaUsage is what creating the pod adds to a quota's usage.
func podQuotaUsage(pod *corev1.Pod) corev1.ResourceList {
	usage := corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("1"),
		"count/pods":        resource.MustParse("1"),
	}
	addComputeUsage(usage, podRequests(pod), podLimits(pod))
	return usage
}

// addComputeUsage adds the quota names of requests and limits: cpu, memory and
// ephemeral-storage count as NAME, requests.NAME and limits.NAME; huge pages and extended
// resources only as requests.NAME (they cannot be overcommitted).
func addComputeUsage(usage, requests, limits corev1.ResourceList) {
	for name, q := range requests {
		switch {
		case name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage:
			usage[name] = q.DeepCopy()
			usage[corev1.ResourceName("requests."+string(name))] = q.DeepCopy()
		case isHugePages(name) || !isNativeResource(name):
			usage[corev1.ResourceName("requests."+string(name))] = q.DeepCopy()
		}
	}
	for name, q := range limits {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
			usage[corev1.ResourceName("limits."+string(name))] = q.DeepCopy()
		}
	}
}

// checkQuotas returns why the pod would be refused by one of the namespace's quotas, or "".
// Quotas are looked at in name order, so the answer does not depend on a cache's order.
func checkQuotas(pod *corev1.Pod, quotas []*corev1.ResourceQuota) string {
	quotas = slices.Clone(quotas)
	sort.Slice(quotas, func(i, j int) bool { return quotas[i].Name < quotas[j].Name })
	usage := podQuotaUsage(pod)
	for _, q := range quotas {
		if len(q.Spec.Hard) == 0 || !quotaMatches(q, pod) {
			continue
		}
		if missing := missingQuotaConstraints(pod, q.Spec.Hard); len(missing) > 0 {
			return fmt.Sprintf("failed quota: %s: must specify %s", q.Name, strings.Join(missing, ","))
		}
		var exceeded []corev1.ResourceName
		for name, hard := range q.Spec.Hard {
			requested, ok := usage[name]
			if !ok {
				continue
			}
			total := q.Status.Used[name].DeepCopy()
			total.Add(requested)
			if total.Cmp(hard) > 0 {
				exceeded = append(exceeded, name)
			}
		}
		if len(exceeded) > 0 {
			return fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				printResources(usage, exceeded), printResources(q.Status.Used, exceeded), printResources(q.Spec.Hard, exceeded))
		}
	}
	return ""
}

// missingQuotaConstraints are the cpu and memory names the quota limits that some container
// does not state, in kube's order (sorted).
func missingQuotaConstraints(pod *corev1.Pod, hard corev1.ResourceList) []string {
	required := sets.New[corev1.ResourceName]()
	for name := range hard {
		if quotaConstrained.Has(name) {
			required.Insert(name)
		}
	}
	if required.Len() == 0 {
		return nil
	}
	missing := sets.New[string]()
	for _, c := range allContainers(pod) {
		stated := corev1.ResourceList{}
		addComputeUsage(stated, c.Resources.Requests, c.Resources.Limits)
		for name := range required {
			if _, ok := stated[name]; !ok {
				missing.Insert(string(name))
			}
		}
	}
	return sets.List(missing)
}

// printResources prints the named entries of list as kube's quota errors do: sorted
// NAME=VALUE pairs, a missing value as 0.
func printResources(list corev1.ResourceList, names []corev1.ResourceName) string {
	sorted := make([]string, 0, len(names))
	for _, n := range names {
		sorted = append(sorted, string(n))
	}
	sort.Strings(sorted)
	parts := make([]string, 0, len(sorted))
	for _, n := range sorted {
		q := list[corev1.ResourceName(n)]
		parts = append(parts, n+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// quotaMatches says whether every scope of the quota selects the pod.
func quotaMatches(q *corev1.ResourceQuota, pod *corev1.Pod) bool {
	for _, scope := range q.Spec.Scopes {
		if !scopeMatches(corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: corev1.ScopeSelectorOpExists}, pod) {
			return false
		}
	}
	if q.Spec.ScopeSelector != nil {
		for _, req := range q.Spec.ScopeSelector.MatchExpressions {
			if !scopeMatches(req, pod) {
				return false
			}
		}
	}
	return true
}

// scopeMatches evaluates one scope against the pod as kube's pod quota evaluator does. Scopes
// that do not apply to pods (VolumeAttributesClass) or that this virt-api does not know
// select nothing, so such a quota is ignored.
func scopeMatches(req corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	switch req.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	case corev1.ResourceQuotaScopeNotTerminating:
		return pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds < 0
	case corev1.ResourceQuotaScopeBestEffort:
		return isBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !isBestEffort(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		return priorityClassMatches(req, pod.Spec.PriorityClassName)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespaceAffinity(pod)
	}
	return false
}

// priorityClassMatches applies a PriorityClass scope: Exists means the pod names a class;
// the other operators compare the class name as a label value.
func priorityClassMatches(req corev1.ScopedResourceSelectorRequirement, class string) bool {
	var op selection.Operator
	switch req.Operator {
	case corev1.ScopeSelectorOpExists:
		return class != ""
	case corev1.ScopeSelectorOpDoesNotExist:
		// The scope's key is always there (maybe empty), as in kube's evaluator.
		return false
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	default:
		return false
	}
	key := string(corev1.ResourceQuotaScopePriorityClass)
	r, err := labels.NewRequirement(key, op, req.Values)
	if err != nil {
		return false
	}
	return r.Matches(labels.Set{key: class})
}

// isBestEffort: no container requests or limits cpu or memory.
func isBestEffort(pod *corev1.Pod) bool {
	for _, c := range allContainers(pod) {
		for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for name := range list {
				if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
					return false
				}
			}
		}
	}
	return true
}

// usesCrossNamespaceAffinity: a pod (anti-)affinity term reaches into other namespaces.
func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}
