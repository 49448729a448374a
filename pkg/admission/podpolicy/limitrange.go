package podpolicy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The LimitRange check follows kube-apiserver's LimitRanger for a pod create. Its mutating
// half fills in, for every container and init container, the requests (defaultRequest) and
// limits (default) a Container item of a LimitRange gives and the container lacks; the API
// server stored those items defaulted already (default from max, defaultRequest from default).
// Its validating half checks min, max and maxLimitRequestRatio of Container items on every
// container, and of Pod items on the pod's totals. kube-apiserver answers a violation with
// 403 Forbidden, and so does virt-api; the message names the LimitRange.
//
// LimitRanges are applied in name order: kube applies them in its cache's order, and only
// the defaults can depend on it (the first default for a resource wins).

// defaultSource remembers which LimitRange gave a container a default, for the messages.
type defaultSource map[string]string // "<container>/<limits|requests>/<resource>" -> LimitRange name

func sortedLimitRanges(ranges []*corev1.LimitRange) []*corev1.LimitRange {
	ranges = slices.Clone(ranges)
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Name < ranges[j].Name })
	return ranges
}

// applyLimitRangeDefaults fills in the containers' missing requests and limits from the
// Container items, as LimitRanger's admit does, and says where each default came from.
func applyLimitRangeDefaults(pod *corev1.Pod, ranges []*corev1.LimitRange) defaultSource {
	from := defaultSource{}
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, c := range allContainers(pod) {
				fill(&c.Resources.Limits, item.Default, from, c.Name+"/limits/", lr.Name)
				fill(&c.Resources.Requests, item.DefaultRequest, from, c.Name+"/requests/", lr.Name)
			}
		}
	}
	return from
}

func fill(list *corev1.ResourceList, defaults corev1.ResourceList, from defaultSource, keyPrefix, source string) {
	for name, q := range defaults {
		if _, ok := (*list)[name]; ok {
			continue
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = q.DeepCopy()
		from[keyPrefix+string(name)] = source
	}
}

// checkLimitRanges returns the violations of the namespace's LimitRanges by the pod (defaults
// applied), each naming its LimitRange, or nil.
func checkLimitRanges(pod *corev1.Pod, ranges []*corev1.LimitRange) []string {
	var out []string
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				for _, c := range allContainers(pod) {
					for _, msg := range itemViolations(item, c.Resources.Requests, c.Resources.Limits) {
						out = append(out, fmt.Sprintf("LimitRange %s: container %s: %s", lr.Name, c.Name, msg))
					}
				}
			case corev1.LimitTypePod:
				for _, msg := range itemViolations(item, podRequests(pod), podLimits(pod)) {
					out = append(out, fmt.Sprintf("LimitRange %s: %s", lr.Name, msg))
				}
			}
		}
	}
	return out
}

// itemViolations checks requests and limits against one LimitRange item, with kube's wording.
func itemViolations(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []string {
	var out []string
	kind := string(item.Type)
	for _, name := range sortedNames(item.Min) {
		min := item.Min[name]
		req, hasReq := requests[name]
		lim, hasLim := limits[name]
		switch {
		case !hasReq:
			out = append(out, fmt.Sprintf("minimum %s usage per %s is %s, but no request is specified", name, kind, min.String()))
		case req.Cmp(min) < 0:
			out = append(out, fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", name, kind, min.String(), req.String()))
		case hasLim && lim.Cmp(min) < 0:
			out = append(out, fmt.Sprintf("minimum %s usage per %s is %s, but limit is %s", name, kind, min.String(), lim.String()))
		}
	}
	for _, name := range sortedNames(item.Max) {
		max := item.Max[name]
		req, hasReq := requests[name]
		lim, hasLim := limits[name]
		switch {
		case !hasLim:
			out = append(out, fmt.Sprintf("maximum %s usage per %s is %s, but no limit is specified", name, kind, max.String()))
		case lim.Cmp(max) > 0:
			out = append(out, fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", name, kind, max.String(), lim.String()))
		case hasReq && req.Cmp(max) > 0:
			out = append(out, fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", name, kind, max.String(), req.String()))
		}
	}
	for _, name := range sortedNames(item.MaxLimitRequestRatio) {
		ratio := item.MaxLimitRequestRatio[name]
		req, lim := requests[name], limits[name]
		switch {
		case req.IsZero():
			out = append(out, fmt.Sprintf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, ratio.String()))
		case lim.IsZero():
			out = append(out, fmt.Sprintf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, ratio.String()))
		default:
			// Compared in milli-units, as kube does, so that ratios like 1.5 work.
			observed := float64(lim.MilliValue()) / float64(req.MilliValue())
			if observed*1000 > float64(ratio.MilliValue()) {
				out = append(out, fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, ratio.String(), observed))
			}
		}
	}
	return out
}

func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// requestsWithinLimits is the part of pod validation that only the built pod can answer:
// after virt-controller's sizing (guest memory plus overhead, CPU per vCPU) and the
// LimitRanges' defaults, no container may request more than its limit. kube-apiserver refuses
// such a pod as invalid (422); the message says where the limit came from.
func requestsWithinLimits(pod *corev1.Pod, defaults defaultSource) []string {
	var out []string
	for _, c := range allContainers(pod) {
		for _, name := range sortedNames(c.Resources.Requests) {
			req := c.Resources.Requests[name]
			lim, ok := c.Resources.Limits[name]
			if !ok || req.Cmp(lim) <= 0 {
				continue
			}
			msg := fmt.Sprintf("container %s: %s request %s is more than its limit %s", c.Name, name, req.String(), lim.String())
			if lr, ok := defaults[c.Name+"/limits/"+string(name)]; ok {
				msg += fmt.Sprintf(" (the default limit of LimitRange %s)", lr)
			} else if lr, ok := defaults[c.Name+"/requests/"+string(name)]; ok {
				msg += fmt.Sprintf(" (the request is the default of LimitRange %s)", lr)
			}
			out = append(out, msg)
		}
	}
	return out
}

// joinMessages joins violations into one sentence.
func joinMessages(msgs []string) string { return strings.Join(msgs, "; ") }
