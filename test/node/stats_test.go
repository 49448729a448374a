//go:build libvirt

package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// TestLauncherStatsFromLibvirt: a running guest's statistics come from the real libvirtd,
// under the spec's disk names, and its disk figures rise with what the guest writes.
func TestLauncherStatsFromLibvirt(t *testing.T) {
	vmi := kernelBootVMI("stats", func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "scratch"}}
		v.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("32Mi")}}}}
	})
	r := startLauncher(t, vmi)
	_, err := r.client.Stats(context.Background())
	var ce *api.CallError
	require.ErrorAs(t, err, &ce, "no guest yet")
	assert.Equal(t, 409, ce.Status)

	r.sync()
	r.waitConsoleLog(banner, 120*time.Second)
	// libvirt's first statistics call after a boot can take seconds under TCG (its monitor
	// queries); the handler's 1 s bound gives up, the launcher finishes it for the next ask.
	first := time.Now()
	require.Eventually(t, func() bool {
		_, err := r.client.Stats(context.Background())
		return err == nil
	}, 30*time.Second, 100*time.Millisecond)
	t.Logf("first statistics after %v", time.Since(first).Round(time.Millisecond))
	before := r.stats()
	require.NotNil(t, before.CPUTimeNanoseconds)
	assert.Positive(t, *before.CPUTimeNanoseconds)
	require.Len(t, before.VCPUs, 1)
	assert.Equal(t, uint32(0), before.VCPUs[0].ID)
	assert.Positive(t, before.VCPUs[0].TimeNanoseconds)
	require.NotNil(t, before.Memory.ResidentBytes)
	assert.Greater(t, *before.Memory.ResidentBytes, uint64(16<<20), "QEMU's resident set")
	require.NotNil(t, before.Memory.DomainBytes)
	assert.Equal(t, uint64(128<<20), *before.Memory.DomainBytes)
	require.Len(t, before.Disks, 1)
	assert.Equal(t, "scratch", before.Disks[0].Name, "the spec's name, not libvirt's vda")

	c := r.console()
	defer c.Close()
	r.typeUntil(c, "for m in $(cat /lib/modules/hangar/block.order); do insmod /lib/modules/hangar/$m.ko 2>/dev/null; done; "+
		"dd if=/dev/zero of=/dev/vda bs=1M count=8 conv=fsync 2>/dev/null; echo wrote-$((2*21))", "wrote-42")
	after := r.stats()
	assert.GreaterOrEqual(t, after.Disks[0].WriteBytes, before.Disks[0].WriteBytes+8<<20)
	assert.Greater(t, after.Disks[0].WriteRequests, before.Disks[0].WriteRequests)
	assert.Greater(t, *after.CPUTimeNanoseconds, *before.CPUTimeNanoseconds)

	// A scrape's cost on the launcher's side: one libvirt call, no monitor wait.
	start := time.Now()
	for range 20 {
		r.stats()
	}
	t.Logf("stats call: %v on average", time.Since(start)/20)
}

// TestLauncherNamesAContainerDiskWithoutDisk: a containerDisk image without a disk fails the
// start with a reason and a message naming the volume and the image.
func TestLauncherNamesAContainerDiskWithoutDisk(t *testing.T) {
	diskRoot := launcherDir(t)
	// What the copy leaves of an image without /disk: the volume's directory, empty.
	require.NoError(t, os.MkdirAll(filepath.Join(diskRoot, "root"), 0o755))
	vmi := kernelBootVMI("nodisk", func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "root"}}
		v.Spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "registry.example/no-disk:1"}}}}
	})
	r := startLauncher(t, vmi, "--container-disk-root", diskRoot)
	_, err := r.client.Sync(context.Background(), api.SyncRequest{VMI: vmi})
	require.Error(t, err)
	s := r.waitPhase(api.PhaseFailed, 10*time.Second)
	assert.Equal(t, launcher.ReasonContainerDiskNotFound, s.Reason)
	assert.Contains(t, s.Message, `image "registry.example/no-disk:1" holds no disk`)
	assert.Contains(t, s.Message, `volume "root"`)
	r.waitExit(30 * time.Second)
}

func (r *launcherRun) stats() api.Stats {
	r.t.Helper()
	s, err := r.client.Stats(context.Background())
	require.NoError(r.t, err)
	require.Equal(r.t, string(r.vmi.UID), s.UID)
	return s
}

// typeUntil types line on the console until the guest's console log shows want: a shell
// that just started may drop what came before its prompt.
func (r *launcherRun) typeUntil(c interface{ Write([]byte) (int, error) }, line, want string) {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(r.consoleLog(), want) {
		require.True(r.t, time.Now().Before(deadline), "no %q after typing %q", want, line)
		_, err := c.Write([]byte(line + "\n"))
		require.NoError(r.t, err)
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && !strings.Contains(r.consoleLog(), want); {
			time.Sleep(100 * time.Millisecond)
		}
	}
}
