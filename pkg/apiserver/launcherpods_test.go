package apiserver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func TestLauncherPodIP(t *testing.T) {
	launcher := func(name string, uid types.UID, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid,
				Labels: map[string]string{v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: "vmi-uid"}},
			Spec:   corev1.PodSpec{NodeName: "node-a"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.7", PodIPs: []corev1.PodIP{{IP: "10.244.0.7"}}},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	vmi := func(active map[types.UID]string) *kubevirt.VirtualMachineInstance {
		v := &kubevirt.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guest", UID: "vmi-uid"}}
		v.Status.NodeName, v.Status.ActivePods = "node-a", active
		return v
	}
	for _, tc := range []struct {
		name   string
		pods   []*corev1.Pod
		active map[types.UID]string
		want   string
		err    string
	}{
		{name: "the recorded pod's IP", pods: []*corev1.Pod{launcher("a", "pod-a", nil)},
			active: map[types.UID]string{"pod-a": "node-a"}, want: "10.244.0.7"},
		{name: "another pod with the launcher's labels is not it", active: map[types.UID]string{"pod-a": "node-a"},
			pods: []*corev1.Pod{launcher("a", "pod-a", nil), launcher("fake", "pod-f", func(p *corev1.Pod) { p.Status.PodIP = "10.9.9.9" })},
			want: "10.244.0.7"},
		{name: "dual stack: the IPv4 address", active: map[types.UID]string{"pod-a": "node-a"},
			pods: []*corev1.Pod{launcher("a", "pod-a", func(p *corev1.Pod) {
				p.Status.PodIP, p.Status.PodIPs = "fd00::7", []corev1.PodIP{{IP: "fd00::7"}, {IP: "10.244.0.8"}}
			})}, want: "10.244.0.8"},
		{name: "no pod recorded", pods: []*corev1.Pod{launcher("a", "pod-a", nil)}, err: "0 launcher pods"},
		{name: "the pod recorded on another node", pods: []*corev1.Pod{launcher("a", "pod-a", nil)},
			active: map[types.UID]string{"pod-a": "node-b"}, err: "0 launcher pods"},
		{name: "the recorded pod is gone", active: map[types.UID]string{"pod-x": "node-a"},
			pods: []*corev1.Pod{launcher("a", "pod-a", nil)}, err: "not found"},
		{name: "host network", active: map[types.UID]string{"pod-a": "node-a"},
			pods: []*corev1.Pod{launcher("a", "pod-a", func(p *corev1.Pod) { p.Spec.HostNetwork = true })}, err: "host's network"},
		{name: "not running", active: map[types.UID]string{"pod-a": "node-a"},
			pods: []*corev1.Pod{launcher("a", "pod-a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })}, err: "not Running"},
		{name: "no IP yet", active: map[types.UID]string{"pod-a": "node-a"},
			pods: []*corev1.Pod{launcher("a", "pod-a", func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil })}, err: "no IPv4 address"},
		{name: "the pod on another node than the instance's", active: map[types.UID]string{"pod-a": "node-a"},
			pods: []*corev1.Pod{launcher("a", "pod-a", func(p *corev1.Pod) { p.Spec.NodeName = "node-b" })}, err: "runs on node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			for _, p := range tc.pods {
				_, err := kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			ip, err := launcherPods{kube: kube}.LauncherPodIP(context.Background(), vmi(tc.active))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, ip.String())
		})
	}
}
