package launcher

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// withHotplugged adds a hotplugged claim volume and its SCSI disk to vmi.
func withHotplugged(vmi *v1.VirtualMachineInstance, name string) *v1.VirtualMachineInstance {
	vmi = vmi.DeepCopy()
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks,
		v1.Disk{Name: name, Serial: name, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}}})
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-claim"}, Hotpluggable: true}}})
	return vmi
}

// handOver hands the file path over to l's handover socket, with its read-only copy, as
// virt-handler does.
func handOver(t *testing.T, l *Launcher, volume, path string) {
	t.Helper()
	handOverAs(t, l, api.Handover{Volume: volume, Writable: true, ReadOnlyCopy: true}, path)
}

// handOverAs hands the file path over with h.
func handOverAs(t *testing.T, l *Launcher, h api.Handover, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	files := []*os.File{f}
	if h.ReadOnlyCopy {
		ro, err := os.Open(path)
		require.NoError(t, err)
		defer ro.Close()
		files = append(files, ro)
	}
	var c net.Conn
	require.Eventually(t, func() bool {
		c, err = net.Dial("unix", l.HandoverSocketPath())
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	require.NoError(t, api.HandOver(c.(*net.UnixConn), h, files...))
}

// TestHotplug: a hotplugged volume is left out of the domain's start, attached once its
// descriptors are handed over and a sync names it (its source their fd set in QEMU, with a
// placeholder where libvirt looks), reported in the state, in the way of a migration, and
// detached when the spec drops it, its fd set and placeholder gone with it.
func TestHotplug(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Serve(ctx) }()

	vmi := withHotplugged(testVMI(), "hot")
	s, err := l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	assert.Equal(t, api.PhaseRunning, s.Phase)
	assert.True(t, s.ReadOnlyCopies, "the launcher says it takes read-only copies")
	assert.NotContains(t, hv.defined, "hot", "not part of the domain it starts with")
	assert.Empty(t, s.Hotplugged, "nothing handed over yet")
	assert.Zero(t, countOf(hv.Calls(), "AttachDevice"))

	disk := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, os.WriteFile(disk, make([]byte, 1<<20), 0o600))
	handOver(t, l, "hot", disk)
	s, err = l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	assert.Equal(t, []api.HotpluggedVolume{{Name: "hot", Target: "sda"}}, s.Hotplugged)
	require.Len(t, hv.devices, 1)
	attached := hv.devices[0]
	assert.Contains(t, attached, `<source file="/dev/fdset/1001">`)
	assert.Contains(t, attached, `<target dev="sda" bus="scsi">`)
	assert.Contains(t, attached, `<serial>hot</serial>`)
	assert.Equal(t, []fdSet{{id: 1001, files: []string{disk + " read-write", disk + " read-only"}}}, hv.fdSets,
		"QEMU gets the handed-over file read-write and read-only")
	assert.FileExists(t, filepath.Join(l.cfg.FDSetDir, "1001"))
	l.mu.Lock()
	assert.Empty(t, l.handedOver, "the launcher keeps no descriptor: QEMU has its own")
	l.mu.Unlock()

	// Again: nothing more to do.
	_, err = l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	assert.Equal(t, 1, countOf(hv.Calls(), "AttachDevice"))

	_, err = l.Migrate(api.MigrateRequest{UID: "m1"})
	assert.ErrorContains(t, err, "a guest with hotplugged volumes (hot) cannot migrate yet")

	s, err = l.Sync(ctx, api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	assert.Empty(t, s.Hotplugged)
	assert.Equal(t, []string{attached}, hv.detached, "detached as it was attached")
	assert.Equal(t, 1, countOf(hv.Calls(), "RemoveFDSet"))
	assert.NoFileExists(t, filepath.Join(l.cfg.FDSetDir, "1001"))

	// Plugged again: a new fd set.
	handOver(t, l, "hot", disk)
	s, err = l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	assert.Equal(t, []api.HotpluggedVolume{{Name: "hot", Target: "sda"}}, s.Hotplugged)
	assert.Contains(t, hv.devices[1], `<source file="/dev/fdset/1002">`)
}

// TestHotplugFromAnOlderHandler: a handler from before read-only copies hands over one
// descriptor of a disk image; the launcher opens the read-only copy itself.
func TestHotplugFromAnOlderHandler(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Serve(ctx) }()
	disk := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, os.WriteFile(disk, make([]byte, 1<<20), 0o600))
	handOverAs(t, l, api.Handover{Volume: "hot", Writable: true}, disk)
	s, err := l.Sync(ctx, api.SyncRequest{VMI: withHotplugged(testVMI(), "hot")})
	require.NoError(t, err)
	assert.Equal(t, []api.HotpluggedVolume{{Name: "hot", Target: "sda"}}, s.Hotplugged)
	assert.Equal(t, []fdSet{{id: 1001, files: []string{disk + " read-write", disk + " read-only"}}}, hv.fdSets)
}

// TestHotplugAttachFails: a disk QEMU would not take leaves no fd set and no placeholder,
// and the next sync tries again with what was handed over.
func TestHotplugAttachFails(t *testing.T) {
	hv := newFake()
	hv.failOn = "AttachDevice"
	l := newTestLauncher(t, hv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Serve(ctx) }()
	vmi := withHotplugged(testVMI(), "hot")
	_, err := l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	disk := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, os.WriteFile(disk, make([]byte, 1<<20), 0o600))
	handOver(t, l, "hot", disk)

	_, err = l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.ErrorContains(t, err, "attach volume hot: "+assert.AnError.Error())
	assert.Equal(t, 1, countOf(hv.Calls(), "RemoveFDSet"))
	entries, err := os.ReadDir(l.cfg.FDSetDir)
	require.NoError(t, err)
	assert.Empty(t, entries)

	hv.mu.Lock()
	hv.failOn = ""
	hv.mu.Unlock()
	s, err := l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	assert.Equal(t, []api.HotpluggedVolume{{Name: "hot", Target: "sda"}}, s.Hotplugged)
}

// TestHotplugHandoverRefused: a handover of a name that is no volume name is refused and
// the launcher says why.
func TestHotplugHandoverRefused(t *testing.T) {
	l := newTestLauncher(t, newFake())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Serve(ctx) }()
	var c net.Conn
	var err error
	require.Eventually(t, func() bool {
		c, err = net.Dial("unix", l.HandoverSocketPath())
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	defer c.Close()
	// Without a descriptor: the launcher answers with the reason.
	_, err = c.Write(append([]byte{0, 0, 0, 2}, "{}"...))
	require.NoError(t, err)
	answer := make([]byte, 256)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, _ := c.Read(answer)
	assert.Contains(t, string(answer[:n]), "one or two descriptors, not 0")
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.handedOver)
}

// TestHotpluggableVolumeThePodHas: a hotpluggable volume whose claim the launcher pod has (a
// VM that persisted a hotplugged volume, a claim virt-controller mounted) is an ordinary disk
// of the domain from its start, never hotplugged or detached.
func TestHotpluggableVolumeThePodHas(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	l.cfg.PVCDir = filepath.Join(t.TempDir(), "pvcs")
	require.NoError(t, os.MkdirAll(filepath.Join(l.cfg.PVCDir, "hot"), 0o755))
	require.NoError(t, os.WriteFile(l.Layout().PVCFile("hot"), make([]byte, 4096), 0o600))

	s, err := l.Sync(context.Background(), api.SyncRequest{VMI: withHotplugged(testVMI(), "hot")})
	require.NoError(t, err)
	assert.Contains(t, hv.defined, l.Layout().PVCFile("hot"), "in the domain it starts with")
	assert.Empty(t, s.Hotplugged)
	_, err = l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	assert.Zero(t, countOf(hv.Calls(), "AttachDevice")+countOf(hv.Calls(), "DetachDevice"))
}
