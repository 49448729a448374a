//go:build libvirt

package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// TestContainerDiskCloudInitAndEmptyDisk boots hack/guest's Debian containerDisk (kernelBoot
// into its root partition) through a qcow2 overlay, with a NoCloud ISO from the launcher's
// own ISO writer, read by the guest's NoCloud reader, and an empty disk the guest measures.
func TestContainerDiskCloudInitAndEmptyDisk(t *testing.T) {
	env := testEnv(t)
	image := filepath.Join(env.root, "_output", "guest", "containerdisk-rootfs")
	base := filepath.Join(image, "disk", "debian.qcow2")
	before, err := os.Stat(base)
	if err != nil {
		t.Fatalf("no containerDisk: hack/test-node.sh builds it (hack/guest/build-containerdisk.sh): %v", err)
	}
	// The launcher finds volume "root"'s image files under <root>/root, as a pod would mount them.
	diskRoot := launcherDir(t)
	require.NoError(t, os.Symlink(image, filepath.Join(diskRoot, "root")))

	vmi := kernelBootVMI("seeded", func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Firmware.KernelBoot.KernelArgs = "root=LABEL=hangar-root rw console=ttyS0 quiet no_timer_check"
		v.Spec.Domain.Resources.Requests["memory"] = resource.MustParse("256Mi")
		v.Spec.Domain.Devices.Disks = []v1.Disk{
			{Name: "root"},
			{Name: "scratch"},
			{Name: "cloudinit", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{}}},
		}
		v.Spec.Volumes = []v1.Volume{
			{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "hangar.local/debian:test"}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}},
			{Name: "cloudinit", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{
				UserData: "#cloud-config\nhostname: seeded-by-cloud-init\nruncmd:\n - [sh, -c, 'echo hangar-emptydisk-sectors=$(cat /sys/block/vdb/size)']\n",
			}}},
		}
		v.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr.To(false)
	})
	r := startLauncher(t, vmi, "--container-disk-root", diskRoot)
	r.sync()
	took := r.waitConsoleLog("HANGAR-GUEST-READY hostname=seeded-by-cloud-init", 240*time.Second)
	t.Logf("sync -> containerDisk banner: %s", took)
	r.waitConsoleLog("hangar-emptydisk-sectors=2097152", 10*time.Second)

	overlay := filepath.Join(r.ephemeralDir, "container-disks", "root.qcow2")
	_, err = os.Stat(overlay)
	require.NoError(t, err)
	after, err := os.Stat(base)
	require.NoError(t, err)
	assert.Equal(t, before.ModTime(), after.ModTime(), "the image is never written")
	assert.Equal(t, before.Size(), after.Size())

	// The getty on ttyS0 starts after the banner and flushes what was typed before: retype.
	c := r.console()
	deadline := time.Now().Add(120 * time.Second)
	var s api.State
	for s.Phase != api.PhaseSucceeded {
		_, _ = c.Write([]byte("poweroff -f\n")) // the relay closes once the guest is gone
		require.True(t, time.Now().Before(deadline), "the guest did not power off")
		s = r.waitPhaseOrTimeout(api.PhaseSucceeded, 2*time.Second)
	}
	assert.Equal(t, "GuestShutdown", s.Reason)
	r.waitExit(30 * time.Second)
}
