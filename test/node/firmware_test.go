//go:build libvirt

package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// uefiVMI is hack/guest's UEFI guest (build-uefi.sh): Debian's signed shim, GRUB and kernel,
// then the busybox initramfs, which reports Secure Boot, an EFI variable and the TPM on the
// console (hack/guest/initramfs/firmware.sh). firmwareUUID names the VM across restarts.
func uefiVMI(name string, firmwareUUID types.UID, secureBoot, persistent bool) *v1.VirtualMachineInstance {
	vmi := kernelBootVMI(name, func(v *v1.VirtualMachineInstance) {
		// GRUB runs out of memory below ~384 MiB loading the kernel and initrd.
		v.Spec.Domain.Resources.Requests["memory"] = resource.MustParse("512Mi")
		v.Spec.Domain.Firmware = &v1.Firmware{UUID: firmwareUUID, Bootloader: &v1.Bootloader{EFI: &v1.EFI{
			SecureBoot: ptr.To(secureBoot), Persistent: ptr.To(persistent)}}}
		if secureBoot {
			v.Spec.Domain.Features = &v1.Features{SMM: &v1.FeatureState{}}
		}
		v.Spec.Domain.Devices.TPM = &v1.TPMDevice{Persistent: ptr.To(persistent)}
		v.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "root"}}
		v.Spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{
			ContainerDisk: &v1.ContainerDiskSource{Image: "hangar.local/uefi:test"}}}}
		v.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr.To(false)
	})
	return vmi
}

// uefiDiskRoot is a containerDisk root with the UEFI guest's image as volume "root".
func uefiDiskRoot(t *testing.T) string {
	env := testEnv(t)
	image := filepath.Join(env.root, "_output", "guest", "uefi-rootfs")
	_, err := os.Stat(filepath.Join(image, "disk", "uefi.qcow2"))
	require.NoError(t, err, "no UEFI guest: hack/test-node.sh builds it with hack/guest/build-uefi.sh")
	root := launcherDir(t)
	require.NoError(t, os.Symlink(image, filepath.Join(root, "root")))
	return root
}

// vmStateDir is a VM's state claim as the launcher's user sees it mounted.
func vmStateDir(t *testing.T) string {
	dir := launcherDir(t)
	require.NoError(t, os.Chown(dir, layout.LauncherUID, layout.LauncherUID))
	return dir
}

// bootUEFI runs one instance of the VM to its banner, checks what the guest reported, and
// shuts it down through the power button (so the firmware and swtpm end cleanly).
func bootUEFI(t *testing.T, vmi *v1.VirtualMachineInstance, diskRoot string, args []string, wantEFI, wantTPM string, while ...func(*launcherRun)) time.Duration {
	t.Helper()
	r := startLauncher(t, vmi, append([]string{"--container-disk-root", diskRoot}, args...)...)
	r.sync()
	took := r.waitConsoleLog(banner, 300*time.Second)
	log := r.consoleLog()
	assert.Contains(t, log, wantEFI)
	assert.Contains(t, log, wantTPM)
	for _, f := range while {
		f(r)
	}
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	s := r.waitPhase(api.PhaseSucceeded, 90*time.Second)
	assert.Equal(t, "GuestShutdown", s.Reason)
	r.waitExit(30 * time.Second)
	return took
}

// checkGuestAgent: the guest's qemu-ga (the UEFI guest starts it) connects through libvirt,
// the launcher reports its OS in the state and answers guest info, and a freeze and a thaw
// go through to it.
func checkGuestAgent(r *launcherRun) {
	t := r.t
	r.waitConsoleLog("HANGAR-GUEST-AGENT started", 10*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	var s api.State
	for s = r.State(); s.Agent == nil; s = r.State() {
		require.True(t, time.Now().Before(deadline), "the guest agent did not connect; state %+v", s)
		time.Sleep(200 * time.Millisecond)
	}
	assert.Equal(t, "hangar-test", s.Agent.OS.ID)
	info, err := r.client.GuestInfo(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "Hangar UEFI test guest (busybox on Debian 12's kernel)", info.OS.PrettyName)
	assert.Contains(t, info.OS.KernelRelease, "amd64")
	assert.NotEmpty(t, info.GuestAgentVersion)

	s, err = r.client.Freeze(context.Background(), 0)
	require.NoError(t, err)
	assert.True(t, s.FSFrozen)
	s, err = r.client.Unfreeze(context.Background())
	require.NoError(t, err)
	assert.False(t, s.FSFrozen)
}

// TestUEFISecureBootAndPersistentState boots the UEFI guest through the launcher with
// Debian's OVMF and swtpm: with Secure Boot the guest itself sees it enforced (so shim, GRUB
// and the kernel passed the firmware's checks), its TPM answers, its guest agent connects, and with persistent EFI
// variables and TPM what the first boot stored is there after a restart of the VM (a new
// instance, a new launcher, the same state claim). Without Secure Boot and persistence the
// same disk boots and keeps nothing.
func TestUEFISecureBootAndPersistentState(t *testing.T) {
	diskRoot := uefiDiskRoot(t)

	t.Run("secure boot, persistent EFI variables and TPM across a restart", func(t *testing.T) {
		state := vmStateDir(t)
		vm := types.UID(uuid.NewUUID())
		took := bootUEFI(t, uefiVMI("uefi-sb", vm, true, true), diskRoot, []string{"--vm-state-dir", state},
			"HANGAR-GUEST-EFI secureboot=1 var=none", "HANGAR-GUEST-TPM random=ok nv=none", checkGuestAgent)
		t.Logf("sync -> UEFI Secure Boot banner: %s", took)

		// KubeVirt's layout on the claim: the variables by instance name, the TPM by UUID.
		_, err := os.Stat(filepath.Join(state, "nvram", "uefi-sb_VARS.fd"))
		assert.NoError(t, err, "EFI variables on the state claim")
		_, err = os.Stat(filepath.Join(state, "swtpm", string(vm)))
		assert.NoError(t, err, "TPM state on the state claim")

		// The restarted VM: a new instance (new UID) of the same VM.
		bootUEFI(t, uefiVMI("uefi-sb", vm, true, true), diskRoot, []string{"--vm-state-dir", state},
			"HANGAR-GUEST-EFI secureboot=1 var=persisted", "HANGAR-GUEST-TPM random=ok nv=HANGARNV")
	})

	t.Run("no secure boot, nothing persistent", func(t *testing.T) {
		vm := types.UID(uuid.NewUUID())
		took := bootUEFI(t, uefiVMI("uefi-plain", vm, false, false), diskRoot, nil,
			"HANGAR-GUEST-EFI secureboot=0 var=none", "HANGAR-GUEST-TPM random=ok nv=none")
		t.Logf("sync -> UEFI banner: %s", took)
		bootUEFI(t, uefiVMI("uefi-plain", vm, false, false), diskRoot, nil,
			"HANGAR-GUEST-EFI secureboot=0 var=none", "HANGAR-GUEST-TPM random=ok nv=none")
	})
}

// bareQEMUUEFIBoot boots the UEFI guest with QEMU alone, with the same OVMF (Secure Boot),
// memory and disk as the launcher gives it, and returns the time from QEMU's start to the
// banner: the baseline of the launcher's figure.
func bareQEMUUEFIBoot(t *testing.T, diskRoot string) time.Duration {
	dir := t.TempDir()
	vars := filepath.Join(dir, "VARS.fd")
	data, err := os.ReadFile("/usr/share/OVMF/OVMF_VARS_4M.ms.fd")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(vars, data, 0o600))
	serial := filepath.Join(dir, "serial.log")
	cmd := exec.Command("qemu-system-x86_64", "-machine", "q35,smm=on", "-accel", "tcg", "-m", "512", "-smp", "1",
		"-global", "driver=cfi.pflash01,property=secure,value=on",
		"-drive", "if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.secboot.fd",
		"-drive", "if=pflash,format=raw,unit=1,file="+vars,
		"-drive", "if=virtio,snapshot=on,file="+filepath.Join(diskRoot, "root", "disk", "uefi.qcow2"),
		"-display", "none", "-nodefaults", "-serial", "file:"+serial, "-net", "none")
	start := time.Now()
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for {
		b, _ := os.ReadFile(serial)
		if strings.Contains(string(b), banner) {
			return time.Since(start)
		}
		require.Less(t, time.Since(start), 300*time.Second, "bare QEMU: no banner; serial:\n%s", b)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestUEFIBootFigures: the launcher's Secure Boot boot (sync → banner) against the same image,
// firmware and memory under bare QEMU, one after the other in one run.
func TestUEFIBootFigures(t *testing.T) {
	diskRoot := uefiDiskRoot(t)
	bare := bareQEMUUEFIBoot(t, diskRoot)
	r := startLauncher(t, uefiVMI("uefi-figure", types.UID(uuid.NewUUID()), true, false), "--container-disk-root", diskRoot)
	r.sync()
	launcher := r.waitConsoleLog(banner, 300*time.Second)
	t.Logf("UEFI Secure Boot to banner: launcher %s, bare QEMU %s (ratio %.2f)", launcher, bare, launcher.Seconds()/bare.Seconds())
	writeFigure(t, "uefi_secureboot_bare_qemu_to_banner", bare)
	writeFigure(t, "uefi_secureboot_launcher_sync_to_banner", launcher)
}
