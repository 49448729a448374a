package podpolicy

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podRequests and podLimits total a pod's containers as the scheduler, the quota and the
// LimitRanger count them (k8s.io/component-helpers' resource helpers): the containers and the
// sidecars (restartable init containers, which run beside them: guest-console-log) summed,
// raised to what any init container asks for while it runs, plus the sidecars started before
// it (init containers run one at a time, in order). Launcher pods have no overhead (no
// runtimeClassName).
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	return podTotal(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
}

func podLimits(pod *corev1.Pod) corev1.ResourceList {
	return podTotal(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
}

func podTotal(pod *corev1.Pod, list func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		for name, q := range list(&pod.Spec.Containers[i]) {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	sidecars := corev1.ResourceList{}
	peak := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		running := corev1.ResourceList{}
		if isSidecar(c) {
			addTo(total, list(c))
			addTo(sidecars, list(c))
			addTo(running, sidecars)
		} else {
			addTo(running, list(c))
			addTo(running, sidecars)
		}
		for name, q := range running {
			if cur, ok := peak[name]; !ok || q.Cmp(cur) > 0 {
				peak[name] = q
			}
		}
	}
	for name, q := range peak {
		if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
			total[name] = q.DeepCopy()
		}
	}
	return total
}

// isSidecar: a restartable init container, which runs beside the containers.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func addTo(sum, l corev1.ResourceList) {
	for name, q := range l {
		s := sum[name]
		s.Add(q)
		sum[name] = s
	}
}

// isNativeResource: a resource without a domain, or in kubernetes.io; everything else is an
// extended resource (a device plugin's, such as devices.kubevirt.io/kvm).
func isNativeResource(name corev1.ResourceName) bool {
	s := string(name)
	return !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
}

// isHugePages reports the hugepages-<size> resources.
func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// allContainers are the pod's init containers and containers, in the order the kubelet
// starts them.
func allContainers(pod *corev1.Pod) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}
