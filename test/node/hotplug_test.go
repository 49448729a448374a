//go:build libvirt

package node

import (
	"os"
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

// TestHotplugDiskIntoRunningGuest: the real launcher, libvirt and QEMU hotplug a disk into a
// running guest from a descriptor handed over as virt-handler will (docs/hotplug.md): the
// file lives in a directory only root may enter, which the launcher's user never could
// reach by a path. The guest sees a new SCSI disk of the file's size, writes to it, and the
// bytes land in the file; removed from the spec, the disk leaves the guest.
func TestHotplugDiskIntoRunningGuest(t *testing.T) {
	vmi, diskRoot := debianGuestVMI(t, "hotplug")
	r := startLauncher(t, vmi, "--container-disk-root", diskRoot)
	r.sync()
	r.waitConsoleLog("HANGAR-GUEST-READY", 240*time.Second)

	f, _ := r.handOverHidden("disk.img", 64<<20, api.Handover{Volume: "hot", Writable: true})

	hot := vmi.DeepCopy()
	hot.Spec.Domain.Devices.Disks = append(hot.Spec.Domain.Devices.Disks,
		v1.Disk{Name: "hot", Serial: "hangar-hot", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}}})
	hot.Spec.Volumes = append(hot.Spec.Volumes, v1.Volume{Name: "hot", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "hot"}, Hotpluggable: true}}})
	r.vmi = hot
	s := r.sync()
	assert.Equal(t, []api.HotpluggedVolume{{Name: "hot", Target: "sda"}}, s.Hotplugged)

	// The guest finds the disk by its serial and writes a marker at 1 MiB.
	console := r.console()
	script := "d=/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hangar-hot; for i in $(seq 30); do [ -e $d ] && break; sleep 1; done; " +
		"echo hotplug-sectors=$(cat /sys/block/$(basename $(readlink -f $d))/size); " +
		"printf hangar-hotplugged | dd of=$d bs=1M seek=1 conv=fsync 2>/dev/null && echo hotplug-wr''itten\n"
	deadline := time.Now().Add(120 * time.Second)
	for !strings.Contains(r.consoleLog(), "hotplug-written") {
		require.True(t, time.Now().Before(deadline), "the guest did not write to the hotplugged disk")
		_, _ = console.Write([]byte(script)) // the getty may flush what came before it
		time.Sleep(5 * time.Second)
	}
	r.waitConsoleLog("hotplug-sectors=131072", time.Second)
	written := make([]byte, len("hangar-hotplugged"))
	_, err := f.ReadAt(written, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, "hangar-hotplugged", string(written), "the guest's write is in the claim's file")

	// Out of the spec: detached, and the guest's disk goes.
	r.vmi = vmi
	s = r.sync()
	assert.Empty(t, s.Hotplugged)
	_, _ = console.Write([]byte("for i in $(seq 30); do [ -e /sys/block/sda ] || break; sleep 1; done; " +
		"echo hotplug-sda-$([ -e /sys/block/sda ] && echo present || echo gone)\n"))
	r.waitConsoleLog("hotplug-sda-gone", 60*time.Second)
}

// handOverHidden makes file (size bytes, the launcher's user's) in a directory only root may
// enter (the launcher runs as uid 107, which could never reach it by a path) and hands it
// over to the launcher with h, as virt-handler does; it returns the file, open, and its path.
func (r *launcherRun) handOverHidden(file string, size int64, h api.Handover) (*os.File, string) {
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
	c := r.dial(api.HandoverSocket).(*podsockets.Conn)
	require.NoError(r.t, c.SetDeadline(time.Now().Add(10*time.Second)))
	require.NoError(r.t, api.HandOver(c.UnixConn, h, f))
	return f, path
}
