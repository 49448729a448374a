package expand

import (
	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// applyPreference fills in what the template leaves unset. The preferred topology is applied
// with the instance type's vCPUs only: without an instance type the vCPUs are the template's.
func applyPreference(tmpl *kubevirt.VirtualMachineInstanceTemplateSpec, pref *instancetype.VirtualMachinePreferenceSpec) {
	spec := &tmpl.Spec
	domain := &spec.Domain
	if c := pref.CPU; c != nil && len(c.PreferredCPUFeatures) > 0 {
		if domain.CPU == nil {
			domain.CPU = &kubevirt.CPU{}
		}
		for _, f := range c.PreferredCPUFeatures {
			if !hasFeature(domain.CPU.Features, f.Name) {
				domain.CPU.Features = append(domain.CPU.Features, f)
			}
		}
	}
	if d := pref.Devices; d != nil {
		applyDevicePreferences(&domain.Devices, spec, d)
	}
	if f := pref.Features; f != nil {
		if domain.Features == nil {
			domain.Features = &kubevirt.Features{}
		}
		features := domain.Features
		if features.ACPI.Enabled == nil && f.PreferredAcpi != nil {
			features.ACPI = *f.PreferredAcpi.DeepCopy()
		}
		setIfNil(&features.APIC, f.PreferredApic)
		setIfNil(&features.Hyperv, f.PreferredHyperv)
		setIfNil(&features.KVM, f.PreferredKvm)
		setIfNil(&features.Pvspinlock, f.PreferredPvspinlock)
		setIfNil(&features.SMM, f.PreferredSmm)
	}
	if f := pref.Firmware; f != nil {
		applyFirmwarePreferences(domain, f)
	}
	if m := pref.Machine; m != nil && m.PreferredMachineType != "" {
		if domain.Machine == nil {
			domain.Machine = &kubevirt.Machine{}
		}
		if domain.Machine.Type == "" {
			domain.Machine.Type = m.PreferredMachineType
		}
	}
	if c := pref.Clock; c != nil {
		if domain.Clock == nil {
			domain.Clock = &kubevirt.Clock{}
		}
		if domain.Clock.UTC == nil && domain.Clock.Timezone == nil && c.PreferredClockOffset != nil {
			domain.Clock.ClockOffset = *c.PreferredClockOffset.DeepCopy()
		}
		setIfNil(&domain.Clock.Timer, c.PreferredTimer)
	}
	if spec.Subdomain == "" && pref.PreferredSubdomain != nil {
		spec.Subdomain = *pref.PreferredSubdomain
	}
	if spec.TerminationGracePeriodSeconds == nil && pref.PreferredTerminationGracePeriodSeconds != nil {
		grace := *pref.PreferredTerminationGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &grace
	}
	tmpl.ObjectMeta.Annotations = addMissing(tmpl.ObjectMeta.Annotations, pref.Annotations)
}

func applyDevicePreferences(devices *kubevirt.Devices, spec *kubevirt.VirtualMachineInstanceSpec, d *instancetype.DevicePreferences) {
	setBoolIfNil(&devices.AutoattachGraphicsDevice, d.PreferredAutoattachGraphicsDevice)
	setBoolIfNil(&devices.AutoattachPodInterface, d.PreferredAutoattachPodInterface)
	setBoolIfNil(&devices.AutoattachSerialConsole, d.PreferredAutoattachSerialConsole)
	setBoolIfNil(&devices.AutoattachInputDevice, d.PreferredAutoattachInputDevice)
	setBoolIfNil(&devices.UseVirtioTransitional, d.PreferredUseVirtioTransitional)
	setBoolIfNil(&devices.BlockMultiQueue, d.PreferredBlockMultiQueue)
	setBoolIfNil(&devices.NetworkInterfaceMultiqueue, d.PreferredNetworkInterfaceMultiQueue)
	setIfNil(&devices.Rng, d.PreferredRng)
	setIfNil(&devices.TPM, d.PreferredTPM)

	// Volumes without a disk get one here, as the defaults would add it, so that it takes the
	// preferred bus.
	used := map[string]bool{}
	for _, disk := range devices.Disks {
		used[disk.Name] = true
	}
	for _, v := range spec.Volumes {
		if v.Name != "" && !used[v.Name] && d.PreferredDiskBus != "" {
			devices.Disks = append(devices.Disks, kubevirt.Disk{Name: v.Name})
			used[v.Name] = true
		}
	}
	for i := range devices.Disks {
		disk := &devices.Disks[i]
		switch {
		case disk.CDRom != nil:
			if disk.CDRom.Bus == "" {
				disk.CDRom.Bus = d.PreferredCdromBus
			}
		case disk.Disk == nil:
			if d.PreferredDiskBus != "" {
				disk.Disk = &kubevirt.DiskTarget{Bus: d.PreferredDiskBus}
			}
		case disk.Disk.Bus == "":
			disk.Disk.Bus = d.PreferredDiskBus
		}
	}
	for i := range devices.Interfaces {
		iface := &devices.Interfaces[i]
		if iface.Model == "" {
			iface.Model = d.PreferredInterfaceModel
		}
		if iface.Bridge == nil && iface.Masquerade == nil && d.PreferredInterfaceMasquerade != nil {
			iface.Masquerade = d.PreferredInterfaceMasquerade.DeepCopy()
		}
	}
	for i := range devices.Inputs {
		in := &devices.Inputs[i]
		if in.Bus == "" {
			in.Bus = d.PreferredInputBus
		}
		if in.Type == "" {
			in.Type = d.PreferredInputType
		}
	}
}

func applyFirmwarePreferences(domain *kubevirt.DomainSpec, f *instancetype.FirmwarePreferences) {
	if domain.Firmware == nil {
		domain.Firmware = &kubevirt.Firmware{}
	}
	fw := domain.Firmware
	if fw.Bootloader != nil || fw.KernelBoot != nil {
		return
	}
	switch {
	case f.PreferredEfi != nil:
		fw.Bootloader = &kubevirt.Bootloader{EFI: f.PreferredEfi.DeepCopy()}
	case f.PreferredUseEfi != nil && *f.PreferredUseEfi:
		efi := &kubevirt.EFI{}
		if f.PreferredUseSecureBoot != nil {
			secure := *f.PreferredUseSecureBoot
			efi.SecureBoot = &secure
		}
		fw.Bootloader = &kubevirt.Bootloader{EFI: efi}
	case f.PreferredUseBios != nil && *f.PreferredUseBios:
		bios := &kubevirt.BIOS{}
		if f.PreferredUseBiosSerial != nil {
			serial := *f.PreferredUseBiosSerial
			bios.UseSerial = &serial
		}
		fw.Bootloader = &kubevirt.Bootloader{BIOS: bios}
	}
}

func hasFeature(features []kubevirt.CPUFeature, name string) bool {
	for _, f := range features {
		if f.Name == name {
			return true
		}
	}
	return false
}

// deepCopier is what the generated DeepCopy gives every pointer type.
type deepCopier[T any] interface {
	*T
	DeepCopy() *T
}

// setIfNil sets *dst to a copy of the preferred value when the template leaves it unset.
func setIfNil[T any, P deepCopier[T]](dst *P, preferred P) {
	if *dst == nil && preferred != nil {
		*dst = preferred.DeepCopy()
	}
}

// setBoolIfNil sets *dst to the preferred value when the template leaves it unset.
func setBoolIfNil(dst **bool, preferred *bool) {
	if *dst == nil && preferred != nil {
		v := *preferred
		*dst = &v
	}
}
