//go:build e2e

package e2e

import (
	"context"
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
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
)

// TestLauncherDevicesOnly: with the Hangar object's launcherDevicesOnly, a user's pod that asks
// for devices.kubevirt.io/kvm is refused by kube-apiserver (the release manifest's admission
// policy), while a VM's launcher pod still gets its devices and boots; without it (the
// default, as KubeVirt) the same pod is admitted.
func TestLauncherDevicesOnly(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-devices")
	tenant(t, ns, "e2e-devices-user", "edit")
	cfg := rest.CopyConfig(config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "e2e-devices-user"}
	user := kubernetes.NewForConfigOrDie(cfg)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wants-kvm"}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "c", Image: launcherImage(t), Command: []string{"sleep", "3600"},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1")}}}},
	}}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	waitForDefaultServiceAccount(t, ns)
	_, err := user.CoreV1().Pods(ns).Create(ctx, pod, dryRun)
	require.NoError(t, err, "by default, as in KubeVirt, any pod may ask for the devices")

	setConfiguration(t, func(c *operatorv1alpha1.HangarConfiguration) { c.LauncherDevicesOnly = true })
	waitUntil(t, 30*time.Second, "kube-apiserver refuses the user's pod", func() bool {
		_, err = user.CoreV1().Pods(ns).Create(ctx, pod, dryRun)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "for Hangar's launcher pods only")
	})

	// A VM's launcher pod, which virt-controller creates, still gets them.
	_, err = hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	console := attach(t, ns, "guest", "console")
	console.waitFor(t, banner, 120*time.Second)
	assert.NotEmpty(t, launcherPods(t, ns, waitVMI(t, ns, "guest", 10*time.Second, func(*v1.VirtualMachineInstance) bool { return true }).UID))
}
