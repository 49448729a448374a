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

	"github.com/hangarvm/hangar/pkg/clusterconfig"
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

// TestLauncherDevicesOnly: with the Hangar object's launcherDevicesOnly in hangar-config, the
// release manifest's ValidatingAdmissionPolicy makes kube-apiserver refuse a pod that asks for
// devices.kubevirt.io/kvm or /tun unless virt-controller creates it; without the setting (or
// without hangar-config), any pod may ask, as in KubeVirt.
func TestLauncherDevicesOnly(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	out, err := c.Kubectl("apply", "-f", filepath.Join(framework.RepoRoot(), "artifacts/install/admission/launcher-devices.yaml"))
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
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hangar-config", Namespace: "hangar"},
		Data: map[string]string{clusterconfig.KeyLauncherDevicesOnly: "true"}}
	_, err = c.Kube.CoreV1().ConfigMaps("hangar").Create(ctx, config, metav1.CreateOptions{})
	require.NoError(t, err)

	create := func(client kubernetes.Interface, pod *corev1.Pod) error {
		var err error
		// The namespace's default ServiceAccount appears a moment after the namespace.
		require.Eventually(t, func() bool {
			_, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil || !strings.Contains(err.Error(), "serviceaccount")
		}, 30*time.Second, 200*time.Millisecond)
		return err
	}
	// kube-apiserver learns of the policy and its parameter through informers.
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

	// Off, as KubeVirt has it: anyone may ask.
	config.Data[clusterconfig.KeyLauncherDevicesOnly] = "false"
	_, err = c.Kube.CoreV1().ConfigMaps("hangar").Update(ctx, config, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return create(alice, devicePod("kvm", "devices.kubevirt.io/kvm")) == nil },
		30*time.Second, 200*time.Millisecond, "the setting off, any pod may ask")
	require.NoError(t, c.Kube.CoreV1().ConfigMaps("hangar").Delete(ctx, "hangar-config", metav1.DeleteOptions{}))
	time.Sleep(2 * time.Second)
	assert.NoError(t, create(alice, devicePod("kvm", "devices.kubevirt.io/kvm")), "no hangar-config: allowed")
}
