//go:build libvirt

package node

import (
	"bytes"
	"debug/elf"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// TestMemoryDumpOfRunningGuest: the real launcher, libvirt and QEMU dump a running guest's
// memory into a file handed over as virt-handler hands a memory dump volume's (docs/hotplug.md),
// in a directory only root may enter. The file is an ELF core, and it holds a string the guest
// computed and kept in its memory (never typed: the console shows only its recipe).
func TestMemoryDumpOfRunningGuest(t *testing.T) {
	vmi, diskRoot := debianGuestVMI(t, "memorydump")
	r := startLauncher(t, vmi, "--container-disk-root", diskRoot)
	r.sync()
	r.waitConsoleLog("HANGAR-GUEST-READY", 240*time.Second)
	r.typeUntil(r.console(), "m=hangar-memory-$((6*7))-marker; echo stored-$((6*7))", "stored-42")

	const file = "memorydump-dump-20261129-020000.memory.dump"
	_, path := r.handOverHidden(file, 0, api.Handover{Volume: "dump", Writable: true, MemoryDump: file})

	withDump := vmi.DeepCopy()
	withDump.Spec.Volumes = append(withDump.Spec.Volumes, v1.Volume{Name: "dump", VolumeSource: v1.VolumeSource{MemoryDump: &v1.MemoryDumpVolumeSource{
		PersistentVolumeClaimVolumeSource: v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "dump"}, Hotpluggable: true}}}})
	r.vmi = withDump
	r.sync()
	deadline := time.Now().Add(120 * time.Second)
	var dump api.MemoryDump
	for {
		if s := r.State(); len(s.MemoryDumps) == 1 && s.MemoryDumps[0].Done {
			dump = s.MemoryDumps[0]
			break
		}
		require.True(t, time.Now().Before(deadline), "the dump did not end; launcher log:\n%s", r.launcherLog())
		time.Sleep(200 * time.Millisecond)
	}
	require.False(t, dump.Failed, "the dump failed: %s", dump.Message)
	assert.Equal(t, api.MemoryDump{Volume: "dump", FileName: file, Done: true}, dump)

	core, err := elf.Open(path)
	require.NoError(t, err, "the dump is no ELF file")
	defer core.Close()
	assert.Equal(t, elf.ET_CORE, core.Type)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	guest := vmi.Spec.Domain.Resources.Requests.Memory().Value()
	assert.GreaterOrEqual(t, fi.Size(), guest, "the dump holds the guest's memory")
	content, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Contains(content, []byte("hangar-memory-42-marker")), "the guest's string is not in the dump")
	assert.Equal(t, api.PhaseRunning, r.State().Phase, "the guest runs on after the dump")
}
