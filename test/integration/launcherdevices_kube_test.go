//go:build kube

package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/test/integration/framework"
)

// devicePod is a pod that asks for Hangar's KVM device, as a launcher pod does.
func devicePod(name string, device corev1.ResourceName) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{device: resource.MustParse("1")}}}},
	}}
}

// TestLauncherDevicesOnly: the ValidatingAdmissionPolicy hangar-operator applies with the
// Hangar object's launcherDevicesOnly makes kube-apiserver refuse a pod that asks for
// devices.kubevirt.io/kvm or /tun unless virt-controller creates it; without it (the setting
// off: the operator removes it), any pod may ask, as in KubeVirt. virt-api, which runs the
// ValidatingAdmissionPolicy plugin too, stays ready with the policy in place.
func TestLauncherDevicesOnly(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	policy := filepath.Join(framework.RepoRoot(), "artifacts/components/launcher-devices.yaml")
	out, err := c.Kubectl("apply", "-f", policy)
	require.NoError(t, err, out)
	ns := "tenant"
	createNamespace(t, c.Kube, ns)
	const controller = "system:serviceaccount:hangar:virt-controller"
	bindRole(t, c.Kube, ns, "alice", "edit")
	bindRole(t, c.Kube, ns, controller, "edit") // the pods it makes; its own role is not applied here
	as := func(user string) kubernetes.Interface {
		cfg, err := c.UserConfig(user)
		require.NoError(t, err)
		return kubernetes.NewForConfigOrDie(cfg)
	}
	alice, virtController := as("alice"), as(controller)

	create := func(client kubernetes.Interface, pod *corev1.Pod) error {
		var err error
		// The namespace's default ServiceAccount appears a moment after the namespace.
		require.Eventually(t, func() bool {
			_, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil || !strings.Contains(err.Error(), "serviceaccount")
		}, 30*time.Second, 200*time.Millisecond)
		return err
	}
	// kube-apiserver learns of the policy through informers.
	require.Eventually(t, func() bool {
		return apierrors.IsForbidden(create(alice, devicePod("kvm", "devices.kubevirt.io/kvm")))
	}, 30*time.Second, 200*time.Millisecond, "the policy applies")

	for _, device := range []corev1.ResourceName{"devices.kubevirt.io/kvm", "devices.kubevirt.io/tun"} {
		err := create(alice, devicePod("asks", device))
		require.Error(t, err, device)
		assert.True(t, apierrors.IsForbidden(err), "%s: want 403, got %v", device, err)
		assert.Contains(t, err.Error(), "for Hangar's launcher pods only", device)
		assert.NoError(t, create(virtController, devicePod("launcher", device)), "virt-controller's launcher pods get %s", device)
	}
	assert.NoError(t, create(alice, devicePod("plain", "cpu")), "a pod without Hangar's devices is not looked at")

	// virt-api's own admission chain loaded the policy and still serves.
	_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).List(ctx, metav1.ListOptions{})
	assert.NoError(t, err, "virt-api serves with the policy in place")
	raw, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/apis/kubevirt.io/v1").DoRaw(ctx)
	assert.NoError(t, err, "kubevirt.io through the aggregator: %s", raw)

	// Off, as KubeVirt has it: the operator deletes the policy, and anyone may ask.
	out, err = c.Kubectl("delete", "-f", policy)
	require.NoError(t, err, out)
	require.Eventually(t, func() bool { return create(alice, devicePod("kvm", "devices.kubevirt.io/kvm")) == nil },
		30*time.Second, 200*time.Millisecond, "the setting off, any pod may ask")
}
