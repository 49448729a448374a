//go:build e2e

package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// powerdownMarker is what the test guest prints when its ACPI power button is pressed, right
// before it powers itself off (hack/guest/initramfs/powerbutton).
const powerdownMarker = "HANGAR-GUEST-POWERDOWN"

// history keeps what a watch reports until it is stopped.
type history struct {
	mu     sync.Mutex
	phases []string // instance phase/reason, each change once
	exits  []int32  // exit codes of the launcher pod's compute container
	stop   func()
}

// watchInstance records the phases of an instance and the exit of its launcher pod.
func watchInstance(t *testing.T, ns string, vmi *v1.VirtualMachineInstance, pod corev1.Pod) *history {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	vw, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: vmi.ResourceVersion})
	require.NoError(t, err)
	pw, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: pod.ResourceVersion})
	require.NoError(t, err)
	h := &history{}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev := range vw.ResultChan() {
			v, ok := ev.Object.(*v1.VirtualMachineInstance)
			if !ok || v.UID != vmi.UID || ev.Type == watch.Deleted {
				continue
			}
			p := string(v.Status.Phase) + "/" + v.Status.Reason
			h.mu.Lock()
			if len(h.phases) == 0 || h.phases[len(h.phases)-1] != p {
				h.phases = append(h.phases, p)
			}
			h.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.UID != pod.UID {
				continue
			}
			for _, s := range p.Status.ContainerStatuses {
				if s.Name == layout.ComputeContainer && s.State.Terminated != nil {
					h.mu.Lock()
					h.exits = append(h.exits, s.State.Terminated.ExitCode)
					h.mu.Unlock()
				}
			}
		}
	}()
	h.stop = func() {
		vw.Stop()
		pw.Stop()
		cancel()
		wg.Wait()
	}
	t.Cleanup(h.stop)
	return h
}

func (h *history) seen() (phases []string, exits []int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.phases...), append([]int32(nil), h.exits...)
}

// TestDeleteShutsGuestDownThroughACPI deletes an instance whose grace period is 60 s: the
// guest gets the ACPI power button and powers itself off (its marker on the console), the
// instance passes through Succeeded, the launcher exits 0, and all of it is over in a small
// part of the grace period.
func TestDeleteShutsGuestDownThroughACPI(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-acpi-stop")
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	spec := guestSpec()
	spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	_, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)

	console := attach(t, ns, "guest", "console")
	console.waitFor(t, banner, 90*time.Second)
	vmi := waitVMI(t, ns, "guest", 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	h := watchInstance(t, ns, vmi, pods[0])

	start := time.Now()
	require.NoError(t, vmis.Delete(ctx, "guest", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := vmis.Get(ctx, "guest", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && len(launcherPods(t, ns, vmi.UID)) == 0
	}, 60*time.Second, 250*time.Millisecond, "the instance and its launcher pod go")
	took := time.Since(start)
	h.stop()
	phases, exits := h.seen()
	t.Logf("deleted in %v (grace period 60 s); phases %v; launcher exit codes %v", took, phases, exits)

	assert.Less(t, took, 30*time.Second, "a guest that honours the power button does not wait out its grace period")
	assert.Contains(t, console.output(), powerdownMarker, "the guest shut itself down")
	assert.Contains(t, phases, string(v1.Succeeded)+"/GuestShutdown")
	for _, p := range phases {
		assert.False(t, strings.HasPrefix(p, string(v1.Failed)), "phase %s", p)
	}
	require.NotEmpty(t, exits, "the launcher's exit was reported")
	assert.Equal(t, int32(0), exits[len(exits)-1], "launcher exit code")
}

// TestSoftRebootRebootsGuest: softreboot is an ACPI reboot: the guest gets the power button,
// powers off, and is reset in place; it boots again (the banner a second time) while the
// instance keeps its UID, its launcher pod and its Running phase.
func TestSoftRebootRebootsGuest(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-acpi-reboot")
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	_, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)

	console := attach(t, ns, "guest", "console")
	console.waitFor(t, banner, 90*time.Second)
	before := waitVMI(t, ns, "guest", 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	pods := launcherPods(t, ns, before.UID)
	require.Len(t, pods, 1)
	h := watchInstance(t, ns, before, pods[0])

	start := time.Now()
	_, err = vmis.SoftReboot(ctx, "guest", &v1.SoftRebootOptions{}, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out := console.output()
		i := strings.Index(out, powerdownMarker)
		return i >= 0 && strings.Contains(out[i:], banner)
	}, 90*time.Second, 100*time.Millisecond, "the power-down marker and then the banner again; saw %q", console.output())
	t.Logf("softreboot -> banner again: %v", time.Since(start))
	console.typeUntil(t, "echo rebooted-$((6*7))", "rebooted-42")

	after := waitVMI(t, ns, "guest", 10*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	h.stop()
	phases, exits := h.seen()
	assert.Equal(t, before.UID, after.UID, "the same instance")
	assert.Empty(t, exits, "the launcher kept running")
	for _, p := range phases {
		assert.Equal(t, string(v1.Running)+"/", p, "the instance stays Running")
	}
	assert.Nil(t, condition(after, v1.VirtualMachineInstancePaused), "never reported paused")
	now := launcherPods(t, ns, after.UID)
	require.Len(t, now, 1)
	assert.Equal(t, pods[0].UID, now[0].UID, "the same launcher pod")
	for _, s := range now[0].Status.ContainerStatuses {
		assert.Zero(t, s.RestartCount, "restarts of %s", s.Name)
	}
}

func condition(v *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType) *v1.VirtualMachineInstanceCondition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == t {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}
