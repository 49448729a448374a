package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

func withMemoryDump(vmi *v1.VirtualMachineInstance, name string) *v1.VirtualMachineInstance {
	vmi = vmi.DeepCopy()
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{MemoryDump: &v1.MemoryDumpVolumeSource{
		PersistentVolumeClaimVolumeSource: v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}, Hotpluggable: true}}}})
	return vmi
}

// waitDump waits until the state reports the dump of volume ended.
func waitDump(t *testing.T, l *Launcher, volume string) api.MemoryDump {
	t.Helper()
	var got api.MemoryDump
	require.Eventually(t, func() bool {
		for _, d := range l.State().MemoryDumps {
			if d.Volume == volume && d.Done {
				got = d
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	return got
}

// TestMemoryDump: a dump file handed over is written once a sync names its memory dump volume
// (one the spec does not name is dropped)
// (libvirt's target the launcher's own descriptor, no disk attached), the state reports it
// done under the file's name, a failure is reported with libvirt's words, a new handover is
// a new dump, and a volume the spec dropped is forgotten.
func TestMemoryDump(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Serve(ctx) }()
	vmi := testVMI()
	_, err := l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)

	dir := t.TempDir()
	first, second := "guest-dump-20261129-020000.memory.dump", "guest-dump-20261129-030000.memory.dump"
	for _, f := range []string{first, second} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o600))
	}
	handOverAs(t, l, api.Handover{Volume: "dump", Writable: true, MemoryDump: first}, filepath.Join(dir, first))
	s, err := l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	assert.Empty(t, s.MemoryDumps, "not started, and dropped: the spec does not name the volume")
	assert.Zero(t, countOf(hv.Calls(), "MemoryDump"))

	withDump := withMemoryDump(vmi, "dump")
	handOverAs(t, l, api.Handover{Volume: "dump", Writable: true, MemoryDump: first}, filepath.Join(dir, first))
	_, err = l.Sync(ctx, api.SyncRequest{VMI: withDump})
	require.NoError(t, err)
	assert.Equal(t, api.MemoryDump{Volume: "dump", FileName: first, Done: true}, waitDump(t, l, "dump"))
	hv.mu.Lock()
	require.Len(t, hv.dumps, 1)
	assert.Regexp(t, `^/proc/`+strconv.Itoa(os.Getpid())+`/fd/[0-9]+$`, hv.dumps[0])
	hv.mu.Unlock()
	assert.Empty(t, hv.devices, "a memory dump's volume is no disk of the guest")

	// A second sync starts nothing new; a new handover is a new dump, which may fail.
	_, err = l.Sync(ctx, api.SyncRequest{VMI: withDump})
	require.NoError(t, err)
	assert.Equal(t, 1, countOf(hv.Calls(), "MemoryDump"))
	hv.mu.Lock()
	hv.failOn = "MemoryDump"
	hv.mu.Unlock()
	handOverAs(t, l, api.Handover{Volume: "dump", Writable: true, MemoryDump: second}, filepath.Join(dir, second))
	_, err = l.Sync(ctx, api.SyncRequest{VMI: withDump})
	require.NoError(t, err)
	d := waitDump(t, l, "dump")
	assert.Equal(t, second, d.FileName)
	assert.True(t, d.Failed)
	assert.Equal(t, assert.AnError.Error(), d.Message)

	// Out of the spec: forgotten.
	s, err = l.Sync(ctx, api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	assert.Empty(t, s.MemoryDumps)
}

// TestMemoryDumpHandoverRefused: a handover whose memory dump file name could be a path, or is
// no dump's name, is refused before the launcher takes anything.
func TestMemoryDumpHandoverRefused(t *testing.T) {
	for _, name := range []string{"../../etc/passwd", "disk.img", "/abs-20261129-020000.memory.dump", "a/b-20261129-020000.memory.dump"} {
		assert.Error(t, api.Handover{Volume: "dump", MemoryDump: name}.Validate(), name)
	}
	assert.NoError(t, api.Handover{Volume: "dump", MemoryDump: "guest-dump-20261129-020000.memory.dump"}.Validate())
}
