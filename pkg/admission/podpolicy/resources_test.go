package podpolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestPodRequestsCountSidecars: the sums kube's resource helpers make. Containers and sidecars
// run together; an init container runs alone but beside the sidecars started before it.
func TestPodRequestsCountSidecars(t *testing.T) {
	c := func(name, memory string, sidecar bool) corev1.Container {
		ctr := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q(memory)}}}
		if sidecar {
			ctr.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
		return ctr
	}
	for _, tc := range []struct {
		name       string
		init, main []corev1.Container
		want       string
	}{
		{name: "containers only", main: []corev1.Container{c("a", "100Mi", false), c("b", "50Mi", false)}, want: "150Mi"},
		{name: "a small init container", init: []corev1.Container{c("i", "40Mi", false)}, main: []corev1.Container{c("a", "100Mi", false)}, want: "100Mi"},
		{name: "a large init container", init: []corev1.Container{c("i", "400Mi", false)}, main: []corev1.Container{c("a", "100Mi", false)}, want: "400Mi"},
		{name: "a sidecar adds to the containers", init: []corev1.Container{c("i", "40Mi", false), c("s", "60Mi", true)},
			main: []corev1.Container{c("a", "100Mi", false)}, want: "160Mi"},
		{name: "an init container after a sidecar runs beside it", init: []corev1.Container{c("s", "60Mi", true), c("i", "400Mi", false)},
			main: []corev1.Container{c("a", "100Mi", false)}, want: "460Mi"},
		{name: "an init container before a sidecar does not", init: []corev1.Container{c("i", "400Mi", false), c("s", "60Mi", true)},
			main: []corev1.Container{c("a", "100Mi", false)}, want: "400Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tc.init, Containers: tc.main}}
			got := podRequests(pod)[corev1.ResourceMemory]
			want := q(tc.want)
			assert.Equal(t, 0, want.Cmp(got), "want %s, got %s", tc.want, got.String())
		})
	}
}
