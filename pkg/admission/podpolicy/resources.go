package podpolicy

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podRequests and podLimits total a pod's containers as the scheduler, the quota and the
// LimitRanger count them: the sum over the containers, raised to any init container that asks
// for more (init containers run one at a time, before the others). Launcher pods have no
// sidecars (restartable init containers) and no overhead (no runtimeClassName).
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
	for i := range pod.Spec.InitContainers {
		for name, q := range list(&pod.Spec.InitContainers[i]) {
			if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
				total[name] = q.DeepCopy()
			}
		}
	}
	return total
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
