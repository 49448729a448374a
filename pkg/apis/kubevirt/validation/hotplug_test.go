package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

func TestValidateVirtualMachineInstanceHotplugUpdate(t *testing.T) {
	claim := func(name string, hot bool) kubevirt.Volume {
		return kubevirt.Volume{Name: name, VolumeSource: kubevirt.VolumeSource{PersistentVolumeClaim: &kubevirt.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-claim"}, Hotpluggable: hot}}}
	}
	disk := func(name string) kubevirt.Disk {
		return kubevirt.Disk{Name: name, DiskDevice: kubevirt.DiskDevice{Disk: &kubevirt.DiskTarget{Bus: kubevirt.DiskBusSCSI}}}
	}
	vmi := func(volumes ...kubevirt.Volume) *kubevirt.VirtualMachineInstance {
		v := &kubevirt.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns", ResourceVersion: "1"},
			Spec: kubevirt.VirtualMachineInstanceSpec{Domain: kubevirt.DomainSpec{Resources: kubevirt.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
				Memory: &kubevirt.Memory{Guest: resource.NewQuantity(128<<20, resource.BinarySI)}}}}
		for _, vol := range volumes {
			v.Spec.Volumes = append(v.Spec.Volumes, vol)
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, disk(vol.Name))
		}
		return v
	}
	changed := claim("hot", true)
	changed.PersistentVolumeClaim.ClaimName = "other"
	tests := []struct {
		name     string
		old, vmi *kubevirt.VirtualMachineInstance
		want     string // "" when valid
	}{
		{name: "a hotplugged volume comes", old: vmi(claim("root", false)), vmi: vmi(claim("root", false), claim("hot", true))},
		{name: "and goes", old: vmi(claim("root", false), claim("hot", true)), vmi: vmi(claim("root", false))},
		{name: "a cold volume may not come", old: vmi(claim("root", false)), vmi: vmi(claim("root", false), claim("cold", false)),
			want: "spec: Forbidden: only hotplugged volumes and their disks may change"},
		{name: "nor go", old: vmi(claim("root", false), claim("cold", false)), vmi: vmi(claim("root", false)),
			want: "only hotplugged volumes and their disks may change"},
		{name: "a hotplugged volume does not change", old: vmi(claim("hot", true)), vmi: vmi(changed),
			want: "spec.volumes[0]: Forbidden: a hotplugged volume does not change"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateVirtualMachineInstanceHotplugUpdate(tt.vmi, tt.old)
			if tt.want == "" {
				assert.Empty(t, errs)
				return
			}
			assert.Contains(t, errs.ToAggregate().Error(), tt.want)
		})
	}
}
