package handler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stretchr/testify/assert"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// TestVolumeStatuses: the launcher's hotplugged volumes make the listed ones Ready with their
// target and let dropped ones go once out of the guest; the launcher adds nothing the
// status does not list, and a target that is no SCSI disk's name counts for nothing. Its
// memory dumps move a dump volume on, but only the dump of the file the status names.
func TestVolumeStatuses(t *testing.T) {
	pod := &v1.HotplugVolumeStatus{AttachPodName: "hp-volume-1", AttachPodUID: "uid-hp"}
	attached := v1.VolumeStatus{Name: "hot", Phase: v1.HotplugVolumeAttachedToNode, HotplugVolume: pod}
	now := metav1.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	const file = "guest-dump-20261129-020000.memory.dump"
	dump := v1.VolumeStatus{Name: "dump", Phase: v1.HotplugVolumeAttachedToNode, HotplugVolume: pod,
		MemoryDumpVolume: &v1.DomainMemoryDumpInfo{ClaimName: "dump", TargetFileName: file}}
	dumpIn := func(phase v1.VolumePhase, message string, end *metav1.Time) v1.VolumeStatus {
		s := *dump.DeepCopy()
		s.Phase, s.Message = phase, message
		s.MemoryDumpVolume.StartTimestamp, s.MemoryDumpVolume.EndTimestamp = &now, end
		return s
	}
	detachingDump := *dump.DeepCopy()
	detachingDump.Phase = v1.HotplugVolumeDetaching
	tests := []struct {
		name       string
		statuses   []v1.VolumeStatus
		hotplugged []api.HotpluggedVolume
		dumps      []api.MemoryDump
		want       []v1.VolumeStatus
	}{
		{name: "in the guest: Ready", statuses: []v1.VolumeStatus{attached}, hotplugged: []api.HotpluggedVolume{{Name: "hot", Target: "sda"}},
			want: []v1.VolumeStatus{{Name: "hot", Target: "sda", Phase: v1.VolumeReady, HotplugVolume: pod}}},
		{name: "not yet in the guest", statuses: []v1.VolumeStatus{attached}, want: []v1.VolumeStatus{attached}},
		{name: "dropped and out of the guest: gone", statuses: []v1.VolumeStatus{{Name: "hot", Phase: v1.HotplugVolumeDetaching}}},
		{name: "dropped, still in the guest", statuses: []v1.VolumeStatus{{Name: "hot", Phase: v1.HotplugVolumeDetaching}},
			hotplugged: []api.HotpluggedVolume{{Name: "hot", Target: "sda"}}, want: []v1.VolumeStatus{{Name: "hot", Phase: v1.HotplugVolumeDetaching}}},
		{name: "attack: a volume the status does not list", hotplugged: []api.HotpluggedVolume{{Name: "planted", Target: "sdb"}}},
		{name: "attack: a target that is no disk's name", statuses: []v1.VolumeStatus{attached},
			hotplugged: []api.HotpluggedVolume{{Name: "hot", Target: "../../etc"}}, want: []v1.VolumeStatus{attached}},

		{name: "dump under way", statuses: []v1.VolumeStatus{dump}, dumps: []api.MemoryDump{{Volume: "dump", FileName: file}},
			want: []v1.VolumeStatus{dumpIn(v1.MemoryDumpVolumeInProgress, "the guest's memory is being written to the claim", nil)}},
		{name: "dump done", statuses: []v1.VolumeStatus{dump}, dumps: []api.MemoryDump{{Volume: "dump", FileName: file, Done: true}},
			want: []v1.VolumeStatus{dumpIn(v1.MemoryDumpVolumeCompleted, "the memory dump is on the claim", &now)}},
		{name: "dump failed, the launcher's words cleaned", statuses: []v1.VolumeStatus{dump},
			dumps: []api.MemoryDump{{Volume: "dump", FileName: file, Done: true, Failed: true, Message: "no\nspace"}},
			want:  []v1.VolumeStatus{dumpIn(v1.MemoryDumpVolumeFailed, "memory dump failed: no space", &now)}},
		{name: "an ended dump stays so", statuses: []v1.VolumeStatus{dumpIn(v1.MemoryDumpVolumeCompleted, "done", &now)},
			dumps: []api.MemoryDump{{Volume: "dump", FileName: file, Done: true, Failed: true}},
			want:  []v1.VolumeStatus{dumpIn(v1.MemoryDumpVolumeCompleted, "done", &now)}},
		{name: "the last dump's record counts not for a new one", statuses: []v1.VolumeStatus{dump},
			dumps: []api.MemoryDump{{Volume: "dump", FileName: "guest-dump-20260101-000000.memory.dump", Done: true}},
			want:  []v1.VolumeStatus{dump}},
		{name: "a removed dump volume stays while its dump runs", statuses: []v1.VolumeStatus{detachingDump},
			dumps: []api.MemoryDump{{Volume: "dump", FileName: file}}, want: []v1.VolumeStatus{detachingDump}},
		{name: "a removed dump volume goes once its dump ended", statuses: []v1.VolumeStatus{detachingDump},
			dumps: []api.MemoryDump{{Volume: "dump", FileName: file, Done: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, volumeStatuses(tt.statuses, tt.hotplugged, tt.dumps, now))
		})
	}
}

func TestHotplugSpec(t *testing.T) {
	vmi := &v1.VirtualMachineInstance{}
	for _, name := range []string{"b", "a"} {
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
			DataVolume: &v1.DataVolumeSource{Name: name, Hotpluggable: true}}})
	}
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: "cold", VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: "c"}}})
	assert.Equal(t, "a,b", hotplugSpec(vmi))
}
