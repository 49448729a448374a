package v1

// Questions about a guest's hardware that virt-controller (the launcher pod, its state claim,
// the warning under emulation) and virt-launcher (the domain) must answer alike.

// EFI is the spec's EFI bootloader, or nil when the guest boots BIOS.
func (s *VirtualMachineInstanceSpec) EFI() *EFI {
	if fw := s.Domain.Firmware; fw != nil && fw.Bootloader != nil {
		return fw.Bootloader.EFI
	}
	return nil
}

// SecureBoot says whether the guest boots EFI with Secure Boot (true unless set to false).
func (s *VirtualMachineInstanceSpec) SecureBoot() bool {
	efi := s.EFI()
	return efi != nil && (efi.SecureBoot == nil || *efi.SecureBoot)
}

// PersistentEFI says whether the guest's EFI variables outlive its instance.
func (s *VirtualMachineInstanceSpec) PersistentEFI() bool {
	efi := s.EFI()
	return efi != nil && efi.Persistent != nil && *efi.Persistent
}

// HasTPM says whether the guest has a TPM: tpm given and not disabled.
func (s *VirtualMachineInstanceSpec) HasTPM() bool {
	t := s.Domain.Devices.TPM
	return t != nil && (t.Enabled == nil || *t.Enabled)
}

// PersistentTPM says whether the guest's TPM state outlives its instance.
func (s *VirtualMachineInstanceSpec) PersistentTPM() bool {
	return s.HasTPM() && s.Domain.Devices.TPM.Persistent != nil && *s.Domain.Devices.TPM.Persistent
}

// NeedsStateClaim says whether the guest keeps state across restarts (EFI variables, TPM) in
// its VM's state claim, KubeVirt's backend storage.
func (s *VirtualMachineInstanceSpec) NeedsStateClaim() bool {
	return s.PersistentEFI() || s.PersistentTPM()
}

// KVMOnlyFeatures are the fields of the spec, as paths below spec, that ask for what only KVM
// offers: Hyper-V enlightenments, the paravirtual clocks, spinlocks and EOI, KVM's hiding.
// Under software emulation (TCG) the launcher leaves them out of the domain, and the instance
// says so in its FeaturesDropped condition, rather than fail to start: QEMU's TCG refuses
// Hyper-V's VP index and paravirtual spinlocks outright.
func (s *VirtualMachineInstanceSpec) KVMOnlyFeatures() []string {
	var out []string
	if f := s.Domain.Features; f != nil {
		if f.Hyperv != nil {
			out = append(out, "domain.features.hyperv")
		}
		if f.KVM != nil {
			out = append(out, "domain.features.kvm")
		}
		if f.Pvspinlock.IsEnabled() {
			out = append(out, "domain.features.pvspinlock")
		}
		if f.APIC != nil && f.APIC.EndOfInterrupt {
			out = append(out, "domain.features.apic.endOfInterrupt")
		}
	}
	if c := s.Domain.Clock; c != nil && c.Timer != nil {
		if t := c.Timer.KVM; t != nil && (t.Present == nil || *t.Present) {
			out = append(out, "domain.clock.timer.kvm")
		}
		if t := c.Timer.Hyperv; t != nil && (t.Present == nil || *t.Present) {
			out = append(out, "domain.clock.timer.hyperv")
		}
	}
	return out
}
