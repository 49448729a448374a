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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// TestGuestConsoleLog: `kubectl logs POD -c guest-console-log` shows the guest's serial
// output, the boot's included (written before any console client), and what a console
// session printed; the sidecar does not hold the pod: when the guest powers off, the pod ends.
func TestGuestConsoleLog(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-console-log")
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	_, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	vmi := waitVMI(t, ns, "guest", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	pod := pods[0].Name

	logs := func() string {
		out, _, err := kubectlStdout(t, "-n", ns, "logs", pod, "-c", layout.GuestConsoleLogContainer)
		if err != nil {
			return ""
		}
		return out
	}
	require.Eventually(t, func() bool { return strings.Contains(logs(), banner) }, 120*time.Second, time.Second,
		"the boot's banner in the container's log, with no console open")

	console := attach(t, ns, "guest", "console")
	console.typeUntil(t, "echo logged-$((40+2))", "logged-42")
	require.Eventually(t, func() bool { return strings.Contains(logs(), "logged-42") }, 30*time.Second, time.Second,
		"what the console session printed")

	console.typeUntil(t, "poweroff -f; echo powering-off", "powering-off")
	require.Eventually(t, func() bool {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		return err != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}, 90*time.Second, time.Second, "the pod ends with its guest: the sidecar does not hold it")
	after, err := vmis.Get(ctx, "guest", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, []v1.VirtualMachineInstancePhase{v1.Succeeded, v1.Failed}, after.Status.Phase)
}
