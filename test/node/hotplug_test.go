//go:build libvirt

package node

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// TestHotplugDiskIntoRunningGuest: the real launcher, libvirt and QEMU hotplug disks into a
// running guest from descriptors handed over as virt-handler hands them (docs/hotplug.md):
// a disk image in a directory only root may enter, which the launcher's user never could
// reach by a path, and then a block device (a loop device of such a file), which QEMU takes
// as the host_device of an fd set. The guest sees a new SCSI disk of the file's size, writes
// to it, and the bytes land in the file; removed from the spec, each disk leaves the guest.
func TestHotplugDiskIntoRunningGuest(t *testing.T) {
	vmi, diskRoot := debianGuestVMI(t, "hotplug")
	r := startLauncher(t, vmi, "--container-disk-root", diskRoot)
	r.sync()
	r.waitConsoleLog("HANGAR-GUEST-READY", 240*time.Second)
	console := r.console()

	f, _ := r.handOverHidden("disk.img", 64<<20, api.Handover{Volume: "hot", Writable: true, ReadOnlyCopy: true})
	r.plugAndWrite(console, vmi, "hot", f, 131072)

	// A block device: a loop device of a hidden file, handed over as the attachment pod's.
	backing, path := r.hiddenFile("blk.img", 32<<20)
	out, err := exec.Command("losetup", "--find", "--show", path).CombinedOutput()
	require.NoError(t, err, "losetup: %s", out)
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", loop).Run() })
	require.NoError(t, os.Chown(loop, layout.LauncherUID, layout.LauncherUID))
	dev, err := os.OpenFile(loop, os.O_RDWR, 0)
	require.NoError(t, err)
	defer dev.Close()
	r.handOver(api.Handover{Volume: "blk", Writable: true, ReadOnlyCopy: true}, dev)
	r.plugAndWrite(console, vmi, "blk", backing, 65536)
}

// plugAndWrite hotplugs volume, handed over already, into the running guest of vmi (the
// instance without hotplugged volumes): the guest finds the disk by its serial, of sectors
// 512-byte sectors, and writes a marker at 1 MiB that lands in file; then the volume leaves
// the spec and the disk the guest.
func (r *launcherRun) plugAndWrite(console net.Conn, vmi *v1.VirtualMachineInstance, volume string, file *os.File, sectors int) {
	t := r.t
	t.Helper()
	hot := vmi.DeepCopy()
	hot.Spec.Domain.Devices.Disks = append(hot.Spec.Domain.Devices.Disks,
		v1.Disk{Name: volume, Serial: "hangar-" + volume, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}}})
	hot.Spec.Volumes = append(hot.Spec.Volumes, v1.Volume{Name: volume, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: volume}, Hotpluggable: true}}})
	r.vmi = hot
	s := r.sync()
	require.Len(t, s.Hotplugged, 1)
	assert.Equal(t, volume, s.Hotplugged[0].Name)
	target := s.Hotplugged[0].Target

	marker := "hangar-hotplugged-" + volume
	script := fmt.Sprintf("d=/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hangar-%s; for i in $(seq 30); do [ -e $d ] && break; sleep 1; done; "+
		"echo %s-sectors=$(cat /sys/block/$(basename $(readlink -f $d))/size); "+
		"printf %s | dd of=$d bs=1M seek=1 conv=fsync 2>/dev/null && echo %s-wr''itten\n", volume, volume, marker, volume)
	deadline := time.Now().Add(120 * time.Second)
	for !strings.Contains(r.consoleLog(), volume+"-written") {
		require.True(t, time.Now().Before(deadline), "the guest did not write to the hotplugged disk %s", volume)
		_, _ = console.Write([]byte(script)) // the getty may flush what came before it
		time.Sleep(5 * time.Second)
	}
	r.waitConsoleLog(fmt.Sprintf("%s-sectors=%d", volume, sectors), time.Second)
	written := make([]byte, len(marker))
	_, err := file.ReadAt(written, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, marker, string(written), "the guest's write is in the claim's file")

	// Out of the spec: detached, and the guest's disk goes.
	r.vmi = vmi
	s = r.sync()
	assert.Empty(t, s.Hotplugged)
	_, _ = console.Write([]byte(fmt.Sprintf("for i in $(seq 30); do [ -e /sys/block/%[1]s ] || break; sleep 1; done; "+
		"echo %[2]s-$([ -e /sys/block/%[1]s ] && echo present || echo gone)\n", target, volume)))
	r.waitConsoleLog(volume+"-gone", 60*time.Second)
}

// hiddenFile makes file (size bytes, the launcher's user's) in a directory only root may
// enter (the launcher runs as uid 107, which could never reach it by a path); it returns
// the file, open for reading and writing, and its path.
func (r *launcherRun) hiddenFile(file string, size int64) (*os.File, string) {
	r.t.Helper()
	hidden := r.t.TempDir()
	require.NoError(r.t, os.Chmod(hidden, 0o700))
	path := filepath.Join(hidden, file)
	require.NoError(r.t, os.WriteFile(path, nil, 0o600))
	require.NoError(r.t, os.Truncate(path, size))
	require.NoError(r.t, os.Chown(path, layout.LauncherUID, layout.LauncherUID))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { f.Close() })
	return f, path
}

// handOverHidden makes a hidden file and hands it over to the launcher with h, as
// virt-handler does (with a read-only copy when h asks for one); it returns the file, open,
// and its path.
func (r *launcherRun) handOverHidden(file string, size int64, h api.Handover) (*os.File, string) {
	r.t.Helper()
	f, path := r.hiddenFile(file, size)
	r.handOver(h, f)
	return f, path
}

// handOver hands f over to the launcher with h, and f's read-only copy when h says so.
func (r *launcherRun) handOver(h api.Handover, f *os.File) {
	r.t.Helper()
	files := []*os.File{f}
	if h.ReadOnlyCopy {
		ro, err := api.ReadOnlyCopy(f)
		require.NoError(r.t, err)
		defer ro.Close()
		files = append(files, ro)
	}
	c := r.dial(api.HandoverSocket).(*podsockets.Conn)
	require.NoError(r.t, c.SetDeadline(time.Now().Add(10*time.Second)))
	require.NoError(r.t, api.HandOver(c.UnixConn, h, files...))
}
