package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func withClaimDisk(disk v1.Disk) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, disk)
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: disk.Name, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-" + disk.Name},
			},
		}})
	}
}

// TestClaimDisks: a claim the launcher found as a block device is a raw block disk on its
// device path (KubeVirt's /dev/<volume>), whatever its bus and flags; the others stay image files.
func TestClaimDisks(t *testing.T) {
	tests := []struct {
		name   string
		disks  []v1.Disk
		block  map[string]bool
		layout func(*Layout)
		want   []string
	}{
		{
			name:  "block beside filesystem",
			disks: []v1.Disk{{Name: "fs"}, {Name: "blk"}},
			block: map[string]bool{"blk": true},
			want: []string{
				`<disk type="file" device="disk"><driver name="qemu" type="raw"></driver><source file="/var/run/kubevirt-private/vmi-disks/fs/disk.img"></source><target dev="vda" bus="virtio"></target></disk>`,
				`<disk type="block" device="disk"><driver name="qemu" type="raw"></driver><source dev="/dev/blk"></source><target dev="vdb" bus="virtio"></target></disk>`,
			},
		},
		{
			name:  "read-only block disk on SCSI with a serial",
			disks: []v1.Disk{{Name: "blk", Serial: "B1", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI, ReadOnly: true}}}},
			block: map[string]bool{"blk": true},
			want: []string{
				`<disk type="block" device="disk"><driver name="qemu" type="raw"></driver><source dev="/dev/blk"></source><target dev="sda" bus="scsi"></target><readonly></readonly><serial>B1</serial></disk>`,
				`<controller type="scsi" index="0" model="virtio-scsi"></controller>`,
			},
		},
		{
			name:  "block CD-ROM",
			disks: []v1.Disk{{Name: "iso", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{}}}},
			block: map[string]bool{"iso": true},
			want:  []string{`<disk type="block" device="cdrom"><driver name="qemu" type="raw"></driver><source dev="/dev/iso"></source><target dev="sda" bus="sata"></target><readonly></readonly></disk>`},
		},
		{
			name:   "the launcher's block directory",
			disks:  []v1.Disk{{Name: "blk"}},
			block:  map[string]bool{"blk": true},
			layout: func(l *Layout) { l.BlockDir = "/run/test/dev" },
			want:   []string{`<source dev="/run/test/dev/blk"></source>`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mutate []func(*v1.VirtualMachineInstance)
			for _, d := range tt.disks {
				mutate = append(mutate, withClaimDisk(d))
			}
			opts := testOptions()
			opts.BlockVolumes = tt.block
			if tt.layout != nil {
				tt.layout(&opts.Layout)
			}
			got := domainXML(t, testVMI(mutate...), opts)
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
		})
	}
}
