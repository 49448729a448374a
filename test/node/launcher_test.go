//go:build libvirt

// Package node tests virt-launcher (and later virt-handler) against a real libvirtd and QEMU
// with the kernelBoot test guest of hack/guest. Run with hack/test-node.sh, which installs
// the Debian packages and builds the guest first; root is needed (libvirtd, namespaces).
package node

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

const banner = "HANGAR-GUEST-READY"

// kernelBootVMI is the test guest as virt-api would store it.
func kernelBootVMI(name string, mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "node-test", Name: name, UID: types.UID(uuid.NewUUID())},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
			Firmware: &v1.Firmware{KernelBoot: &v1.KernelBoot{
				KernelArgs: "console=ttyS0 quiet no_timer_check hostname=" + name,
				Container: &v1.KernelBootContainer{
					Image: "hangar.local/kernelboot:test", KernelPath: "/boot/vmlinux", InitrdPath: "/boot/initramfs.cpio.gz",
				},
			}},
			Devices: v1.Devices{AutoattachPodInterface: ptr.To(false)},
		}},
	}
	for _, m := range mutate {
		m(vmi)
	}
	v1.DefaultVirtualMachineInstanceSpec(&vmi.Spec)
	return vmi
}

func (r *launcherRun) sync() api.State {
	r.start = time.Now()
	s, err := r.client.Sync(context.Background(), api.SyncRequest{VMI: r.vmi})
	require.NoError(r.t, err)
	return s
}

// waitConsoleLog waits for text in the launcher's console log (everything the guest printed
// since it started) and returns the time since sync.
func (r *launcherRun) waitConsoleLog(text string, timeout time.Duration) time.Duration {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(filepath.Join(r.runDir, "console.log"))
		if strings.Contains(string(b), text) {
			return time.Since(r.start)
		}
		require.True(r.t, time.Now().Before(deadline), "no %q on the console after %s; console:\n%s", text, timeout, b)
		time.Sleep(10 * time.Millisecond)
	}
}

// waitPhase follows the launcher's events until its phase is want.
func (r *launcherRun) waitPhase(want api.Phase, timeout time.Duration) api.State {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	var after uint64
	for {
		ev, err := r.client.Events(context.Background(), after, time.Second)
		require.NoError(r.t, err)
		if ev.State.Phase == want {
			return ev.State
		}
		after = ev.State.Seq
		require.True(r.t, time.Now().Before(deadline), "phase %q, want %q", ev.State.Phase, want)
	}
}

// waitPhaseOrTimeout is waitPhase that returns the last state seen instead of failing.
func (r *launcherRun) waitPhaseOrTimeout(want api.Phase, timeout time.Duration) api.State {
	deadline := time.Now().Add(timeout)
	var last api.State
	for time.Now().Before(deadline) {
		ev, err := r.client.Events(context.Background(), last.Seq, 500*time.Millisecond)
		if err != nil {
			return last
		}
		last = ev.State
		if last.Phase == want {
			break
		}
	}
	return last
}

func (r *launcherRun) waitExit(timeout time.Duration) {
	r.t.Helper()
	select {
	case <-r.exited:
		assert.NoError(r.t, r.exitErr, "virt-launcher exit status")
	case <-time.After(timeout):
		r.t.Fatalf("virt-launcher did not exit within %s", timeout)
	}
}

// expect reads from c until text appears.
func expect(t *testing.T, c net.Conn, text string, timeout time.Duration) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(timeout)))
	var seen strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(seen.String(), text) {
		n, err := c.Read(buf)
		seen.Write(buf[:n])
		require.NoError(t, err, "waiting for %q; got %q", text, seen.String())
	}
	return seen.String()
}

func TestLauncherBootConsoleVNCPauseAndGuestPowerOff(t *testing.T) {
	r := startLauncher(t, kernelBootVMI("boot"))
	s := r.sync()
	assert.Equal(t, api.PhaseRunning, s.Phase)
	assert.Equal(t, "node-test_boot", s.Domain)
	took := r.waitConsoleLog(banner+" hostname=boot", 120*time.Second)
	t.Logf("sync -> banner: %s", took)
	writeFigure(t, "launcher-sync-to-banner", took)

	// The relay: a shell answers on the console.
	c := r.console()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Write([]byte("echo hangar-$((40+2))\n"))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Second)))
		b := make([]byte, 4096)
		n, _ := c.Read(b)
		if strings.Contains(string(b[:n]), "hangar-42") {
			break
		}
		require.True(t, time.Now().Before(deadline), "no shell on the console")
	}

	// VNC speaks first.
	vnc, err := r.dir.Dial(api.VNCSocketName)
	require.NoError(t, err)
	greeting := make([]byte, 12)
	require.NoError(t, vnc.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = vnc.Read(greeting)
	require.NoError(t, err)
	assert.Equal(t, "RFB 003.008\n", string(greeting))
	vnc.Close()

	// Pause and unpause, reported through events.
	_, err = r.client.Pause(context.Background())
	require.NoError(t, err)
	s = r.waitPhase(api.PhasePaused, 10*time.Second)
	assert.Equal(t, "PausedByUser", s.Reason)
	_, err = r.client.Pause(context.Background())
	assert.Error(t, err, "pausing a paused guest")
	_, err = r.client.Unpause(context.Background())
	require.NoError(t, err)
	r.waitPhase(api.PhaseRunning, 10*time.Second)

	// A second Sync changes nothing.
	s = r.sync()
	assert.Equal(t, api.PhaseRunning, s.Phase)

	// A reboot from inside the guest restarts it in place (on_reboot=restart): still Running.
	_, err = c.Write([]byte("reboot -f\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(r.runDir, "console.log"))
		return strings.Count(string(b), banner+" hostname=boot") >= 2
	}, 120*time.Second, 50*time.Millisecond, "no second banner after the reboot")
	assert.Equal(t, api.PhaseRunning, r.State().Phase)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	expect(t, c, "#", 30*time.Second) // the shell is back

	// The guest powers itself off: Succeeded, and the launcher exits.
	_, err = c.Write([]byte("poweroff -f\n"))
	require.NoError(t, err)
	s = r.waitPhase(api.PhaseSucceeded, 30*time.Second)
	assert.Equal(t, "GuestShutdown", s.Reason)
	r.waitExit(20 * time.Second)
}

func TestLauncherReportsQEMUCrash(t *testing.T) {
	r := startLauncher(t, kernelBootVMI("crash"))
	r.sync()
	r.waitConsoleLog(banner, 120*time.Second)
	require.NoError(t, syscall.Kill(r.qemuPid(), syscall.SIGKILL))
	s := r.waitPhase(api.PhaseFailed, 30*time.Second)
	assert.Equal(t, "QEMUCrashed", s.Reason)
	r.waitExit(20 * time.Second)
}

// debianGuestVMI is hack/guest's Debian containerDisk, kernel-booted into its root partition
// with 256 MiB and no display, then mutate; diskRoot is the launcher's containerDisk root
// (--container-disk-root) that holds its image, as a pod would mount it.
func debianGuestVMI(t *testing.T, name string, mutate ...func(*v1.VirtualMachineInstance)) (vmi *v1.VirtualMachineInstance, diskRoot string) {
	t.Helper()
	env := testEnv(t)
	image := filepath.Join(env.root, "_output", "guest", "containerdisk-rootfs")
	if _, err := os.Stat(filepath.Join(image, "disk", "debian.qcow2")); err != nil {
		t.Fatalf("no containerDisk: hack/test-node.sh builds it (hack/guest/build-containerdisk.sh): %v", err)
	}
	diskRoot = launcherDir(t)
	require.NoError(t, os.Symlink(image, filepath.Join(diskRoot, "root")))
	vmi = kernelBootVMI(name, append([]func(*v1.VirtualMachineInstance){func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Firmware.KernelBoot.KernelArgs = "root=LABEL=hangar-root rw console=ttyS0 quiet no_timer_check"
		v.Spec.Domain.Resources.Requests["memory"] = resource.MustParse("256Mi")
		v.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "root"}}
		v.Spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{
			ContainerDisk: &v1.ContainerDiskSource{Image: "hangar.local/debian:test"}}}}
		v.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr.To(false)
	}}, mutate...)...)
	return vmi, diskRoot
}
