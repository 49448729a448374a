package handler

import (
	"testing"

	"github.com/stretchr/testify/assert"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// TestVolumeStatuses: the launcher's hotplugged volumes make the listed ones Ready with their
// target and let dropped ones go once out of the guest; the launcher adds nothing the
// status does not list, and a target that is no SCSI disk's name counts for nothing.
func TestVolumeStatuses(t *testing.T) {
	pod := &v1.HotplugVolumeStatus{AttachPodName: "hp-volume-1", AttachPodUID: "uid-hp"}
	attached := v1.VolumeStatus{Name: "hot", Phase: v1.HotplugVolumeAttachedToNode, HotplugVolume: pod}
	tests := []struct {
		name       string
		statuses   []v1.VolumeStatus
		hotplugged []api.HotpluggedVolume
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, volumeStatuses(tt.statuses, tt.hotplugged))
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
