package migratable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func claimVolume(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
}

func specWith(binding v1.InterfaceBindingMethod, volumes ...v1.Volume) *v1.VirtualMachineInstanceSpec {
	return &v1.VirtualMachineInstanceSpec{
		Domain:   v1.DomainSpec{Devices: v1.Devices{Interfaces: []v1.Interface{{Name: "default", InterfaceBindingMethod: binding}}}},
		Networks: []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}},
		Volumes:  volumes,
	}
}

var (
	masquerade = v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}
	bridge     = v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}
)

func TestEvaluate(t *testing.T) {
	claims := map[string][]corev1.PersistentVolumeAccessMode{
		"shared": {corev1.ReadWriteOnce, corev1.ReadWriteMany},
		"rwo":    {corev1.ReadWriteOnce},
		"rwop":   {corev1.ReadWriteOncePod},
		"rox":    {corev1.ReadOnlyMany},
	}
	lookup := func(name string) ([]corev1.PersistentVolumeAccessMode, bool) {
		m, ok := claims[name]
		return m, ok
	}
	containerDisk := v1.Volume{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "x"}}}
	emptyDisk := v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{}}}
	cloudInit := v1.Volume{Name: "seed", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config"}}}
	kernelBoot := specWith(masquerade, claimVolume("shared"))
	kernelBoot.Domain.Firmware = &v1.Firmware{KernelBoot: &v1.KernelBoot{Container: &v1.KernelBootContainer{Image: "k"}}}
	noNetwork := specWith(masquerade, claimVolume("shared"))
	withFirmware := func(efi *v1.EFI, tpm *v1.TPMDevice) *v1.VirtualMachineInstanceSpec {
		s := specWith(masquerade, containerDisk)
		s.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: efi}}
		s.Domain.Devices.TPM = tpm
		return s
	}
	yes, no := true, false
	noNetwork.Networks = nil

	tests := []struct {
		name string
		spec *v1.VirtualMachineInstanceSpec
		want Result
	}{
		{"shared claim only: live migration", specWith(masquerade, claimVolume("shared")),
			Result{Status: corev1.ConditionTrue, Method: v1.LiveMigration}},
		{"no volumes", specWith(masquerade), Result{Status: corev1.ConditionTrue, Method: v1.LiveMigration}},
		{"container disk: block migration", specWith(masquerade, containerDisk),
			Result{Status: corev1.ConditionTrue, Method: v1.BlockMigration}},
		{"empty disk and cloud-init with a shared claim: block migration", specWith(masquerade, claimVolume("shared"), emptyDisk, cloudInit),
			Result{Status: corev1.ConditionTrue, Method: v1.BlockMigration}},
		{"kernel boot: block migration", kernelBoot, Result{Status: corev1.ConditionTrue, Method: v1.BlockMigration}},
		{"bridge on the pod network", specWith(bridge, containerDisk), Result{Status: corev1.ConditionFalse,
			Reason:  "InterfaceNotLiveMigratable",
			Message: "cannot migrate VMI which does not use masquerade or a migratable plugin to connect to the pod network"}},
		{"bridge interface without a pod network", func() *v1.VirtualMachineInstanceSpec {
			s := specWith(bridge, containerDisk)
			s.Networks = nil
			return s
		}(), Result{Status: corev1.ConditionTrue, Method: v1.BlockMigration}},
		{"interface checked before disks", specWith(bridge, claimVolume("rwo")), Result{Status: corev1.ConditionFalse,
			Reason:  "InterfaceNotLiveMigratable",
			Message: "cannot migrate VMI which does not use masquerade or a migratable plugin to connect to the pod network"}},
		{"RWO claim", specWith(masquerade, containerDisk, claimVolume("rwo")), Result{Status: corev1.ConditionFalse,
			Reason:  "DisksNotLiveMigratable",
			Message: "cannot migrate VMI: PVC rwo is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)"}},
		{"RWOP claim", specWith(masquerade, claimVolume("rwop")), Result{Status: corev1.ConditionFalse,
			Reason:  "DisksNotLiveMigratable",
			Message: "cannot migrate VMI: PVC rwop is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)"}},
		{"ROX claim", specWith(masquerade, claimVolume("rox")), Result{Status: corev1.ConditionFalse,
			Reason:  "DisksNotLiveMigratable",
			Message: "cannot migrate VMI: PVC rox is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)"}},
		{"missing claim", specWith(masquerade, claimVolume("gone")), Result{Status: corev1.ConditionFalse,
			Reason: "DisksNotLiveMigratable", Message: "cannot migrate VMI: PVC gone does not exist"}},
		{"EFI, variables not kept: block migration", withFirmware(&v1.EFI{}, nil),
			Result{Status: corev1.ConditionTrue, Method: v1.BlockMigration}},
		{"EFI with persistent variables", withFirmware(&v1.EFI{Persistent: &yes}, nil), Result{Status: corev1.ConditionFalse,
			Reason:  "NotMigratable",
			Message: "cannot migrate VMI: its EFI variables are persistent, on a state claim Hangar does not migrate"}},
		{"TPM", withFirmware(&v1.EFI{}, &v1.TPMDevice{}), Result{Status: corev1.ConditionFalse,
			Reason: "NotMigratable", Message: "cannot migrate VMI: it has a TPM device, whose state Hangar does not migrate"}},
		{"disabled TPM", withFirmware(&v1.EFI{}, &v1.TPMDevice{Enabled: &no}),
			Result{Status: corev1.ConditionTrue, Method: v1.BlockMigration}},
		{"masquerade without networks", noNetwork, Result{Status: corev1.ConditionTrue, Method: v1.LiveMigration}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Evaluate(tt.spec, lookup))
		})
	}
}

func TestConditionType(t *testing.T) {
	c := Result{Status: corev1.ConditionFalse, Reason: "R", Message: "M"}.Condition()
	assert.Equal(t, v1.VirtualMachineInstanceConditionType("LiveMigratable"), c.Type)
	assert.Equal(t, corev1.ConditionFalse, c.Status)
}
