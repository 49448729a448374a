package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

func on() *kubevirt.FeatureState  { return &kubevirt.FeatureState{Enabled: ptr.To(true)} }
func off() *kubevirt.FeatureState { return &kubevirt.FeatureState{Enabled: ptr.To(false)} }

// windowsSpec is KubeVirt's Windows example as virt-api stores it: EFI Secure Boot with SMM,
// a TPM, Hyper-V enlightenments, the Windows clock and an e1000 NIC.
func windowsSpec() kubevirt.VirtualMachineInstanceSpec {
	s := validSpec()
	s.Domain.Firmware = &kubevirt.Firmware{Bootloader: &kubevirt.Bootloader{EFI: &kubevirt.EFI{SecureBoot: ptr.To(true)}}}
	s.Domain.Features = &kubevirt.Features{
		ACPI: *on(), SMM: on(), APIC: &kubevirt.FeatureAPIC{FeatureState: *on()},
		Hyperv: &kubevirt.FeatureHyperv{
			Relaxed: on(), VAPIC: on(), Spinlocks: &kubevirt.FeatureSpinlocks{FeatureState: *on(), Spinlocks: ptr.To[uint32](8191)},
			Vpindex: on(), Synic: on(), Synictimer: &kubevirt.SyNICTimer{FeatureState: *on()}, Runtime: on(),
			Frequencies: on(), ResetFeature: on(), Reenlightenment: on(), IPI: on(),
			Tlbflush: &kubevirt.TLBFlush{FeatureState: *on()},
		},
	}
	s.Domain.Clock = &kubevirt.Clock{
		ClockOffset: kubevirt.ClockOffset{UTC: &kubevirt.ClockOffsetUTC{}},
		Timer: &kubevirt.Timer{
			HPET:   &kubevirt.HPETTimer{Present: ptr.To(false)},
			PIT:    &kubevirt.PITTimer{TickPolicy: kubevirt.PITTickPolicyDelay, Present: ptr.To(true)},
			RTC:    &kubevirt.RTCTimer{TickPolicy: kubevirt.RTCTickPolicyCatchup, Present: ptr.To(true)},
			Hyperv: &kubevirt.HypervTimer{Present: ptr.To(true)},
		},
	}
	s.Domain.Devices.TPM = &kubevirt.TPMDevice{Persistent: ptr.To(true)}
	s.Domain.Devices.Inputs = []kubevirt.Input{{Name: "tablet", Bus: kubevirt.InputBusUSB, Type: kubevirt.InputTypeTablet}}
	s.Domain.Devices.Interfaces[0].Model = "e1000"
	s.Domain.CPU.Features = []kubevirt.CPUFeature{{Name: "pcid", Policy: "require"}, {Name: "tsc-deadline"}}
	return s
}

func TestValidateGuestHardware(t *testing.T) {
	require.Empty(t, ValidateVirtualMachineInstanceSpec(ptr.To(windowsSpec()), field.NewPath("spec")), "KubeVirt's Windows example must be valid")

	tests := []struct {
		name   string
		mutate func(s *kubevirt.VirtualMachineInstanceSpec)
		want   []wantErr
	}{
		{"bios and efi", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware.Bootloader.BIOS = &kubevirt.BIOS{}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.firmware.bootloader"}}},
		{"secure boot without smm", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Features.SMM = nil
		}, []wantErr{{field.ErrorTypeRequired, "spec.domain.features.smm"}}},
		{"secure boot by default, smm disabled", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware.Bootloader.EFI.SecureBoot = nil
			s.Domain.Features.SMM = off()
		}, []wantErr{{field.ErrorTypeRequired, "spec.domain.features.smm"}}},
		{"secure boot, no features at all", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Features = nil
		}, []wantErr{{field.ErrorTypeRequired, "spec.domain.features.smm"}}},
		{"bios serial output without a serial console", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware.Bootloader = &kubevirt.Bootloader{BIOS: &kubevirt.BIOS{UseSerial: ptr.To(true)}}
			s.Domain.Devices.AutoattachSerialConsole = ptr.To(false)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.firmware.bootloader.bios.useSerial"}}},
		{"persistent state of a disabled tpm", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.TPM.Enabled = ptr.To(false)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.tpm.persistent"}}},
		{"utc and timezone", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Clock.Timezone = ptr.To[kubevirt.ClockOffsetTimezone]("Europe/Paris")
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.clock"}}},
		{"unknown time zone", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Clock.UTC = nil
			s.Domain.Clock.Timezone = ptr.To[kubevirt.ClockOffsetTimezone]("Mars/Olympus_Mons")
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.clock.timezone"}}},
		{"time zone with a path in it", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Clock.UTC = nil
			s.Domain.Clock.Timezone = ptr.To[kubevirt.ClockOffsetTimezone]("../../etc/passwd")
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.clock.timezone"}}},
		{"offset beyond an int32", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Clock.UTC.OffsetSeconds = ptr.To(1 << 40)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.clock.utc.offsetSeconds"}}},
		{"tick policies", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Clock.Timer.PIT.TickPolicy = "merge"
			s.Domain.Clock.Timer.RTC.TickPolicy = "discard"
			s.Domain.Clock.Timer.RTC.Track = "moon"
			s.Domain.Clock.Timer.HPET.TickPolicy = "later"
		}, []wantErr{
			{field.ErrorTypeNotSupported, "spec.domain.clock.timer.hpet.tickPolicy"},
			{field.ErrorTypeNotSupported, "spec.domain.clock.timer.pit.tickPolicy"},
			{field.ErrorTypeNotSupported, "spec.domain.clock.timer.rtc.tickPolicy"},
			{field.ErrorTypeNotSupported, "spec.domain.clock.timer.rtc.track"},
		}},
		{"synic without vpindex", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Features.Hyperv.Vpindex = off()
		}, []wantErr{
			{field.ErrorTypeInvalid, "spec.domain.features.hyperv.synic"},
			{field.ErrorTypeInvalid, "spec.domain.features.hyperv.tlbflush"},
			{field.ErrorTypeInvalid, "spec.domain.features.hyperv.ipi"},
		}},
		{"stimer without synic", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Features.Hyperv.Synic = off()
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.features.hyperv.synictimer"}}},
		{"evmcs without vapic and vmx", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Features.Hyperv.EVMCS = on()
			s.Domain.Features.Hyperv.VAPIC = off()
		}, []wantErr{
			{field.ErrorTypeInvalid, "spec.domain.features.hyperv.evmcs"},
			{field.ErrorTypeRequired, "spec.domain.cpu.features"},
		}},
		{"too few spinlock retries", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Features.Hyperv.Spinlocks.Spinlocks = ptr.To[uint32](100)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.features.hyperv.spinlocks.spinlocks"}}},
		{"vendor id too long and odd", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Features.Hyperv.Vendorid = &kubevirt.FeatureVendorID{FeatureState: *on(), Vendorid: "thirteen-char"}
		}, []wantErr{{field.ErrorTypeTooLong, "spec.domain.features.hyperv.vendorid.vendorid"}}},
		{"vendor id with a comma", func(s *kubevirt.VirtualMachineInstanceSpec) {
			// A comma would add options to QEMU's -cpu argument.
			s.Domain.Features.Hyperv.Vendorid = &kubevirt.FeatureVendorID{FeatureState: *on(), Vendorid: "a,hv-x"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.features.hyperv.vendorid.vendorid"}}},
		{"cpu features", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.CPU.Features = []kubevirt.CPUFeature{{Name: ""}, {Name: "PCID,x"}, {Name: "pcid", Policy: "maybe"}, {Name: "pcid"}}
		}, []wantErr{
			{field.ErrorTypeRequired, "spec.domain.cpu.features[0].name"},
			{field.ErrorTypeInvalid, "spec.domain.cpu.features[1].name"},
			{field.ErrorTypeNotSupported, "spec.domain.cpu.features[2].policy"},
			{field.ErrorTypeDuplicate, "spec.domain.cpu.features[3].name"},
		}},
		{"inputs", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Inputs = append(s.Domain.Devices.Inputs,
				kubevirt.Input{Name: "tablet", Bus: kubevirt.InputBusUSB, Type: kubevirt.InputTypeTablet},
				kubevirt.Input{Name: "ps2", Bus: "ps2", Type: "keyboard"})
		}, []wantErr{
			{field.ErrorTypeDuplicate, "spec.domain.devices.inputs[1].name"},
			{field.ErrorTypeNotSupported, "spec.domain.devices.inputs[2].bus"},
			{field.ErrorTypeNotSupported, "spec.domain.devices.inputs[2].type"},
		}},
		{"too many inputs", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Inputs = make([]kubevirt.Input, MaxInputs+1)
		}, []wantErr{{field.ErrorTypeTooMany, "spec.domain.devices.inputs"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := windowsSpec()
			tc.mutate(&s)
			assert.ElementsMatch(t, tc.want, errsOf(ValidateVirtualMachineInstanceSpec(&s, field.NewPath("spec"))))
		})
	}
}

// Secure Boot off, or BIOS, needs no SMM; a VM template is checked at its own path.
func TestValidateGuestHardwareAccepts(t *testing.T) {
	for name, mutate := range map[string]func(s *kubevirt.VirtualMachineInstanceSpec){
		"efi without secure boot": func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware.Bootloader.EFI.SecureBoot = ptr.To(false)
			s.Domain.Features.SMM = nil
		},
		"bios with serial output": func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware.Bootloader = &kubevirt.Bootloader{BIOS: &kubevirt.BIOS{UseSerial: ptr.To(true)}}
			s.Domain.Features.SMM = nil
		},
		"time zone": func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Clock.UTC = nil
			s.Domain.Clock.Timezone = ptr.To[kubevirt.ClockOffsetTimezone]("America/New_York")
		},
		"negative offset": func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Clock.UTC.OffsetSeconds = ptr.To(-3600)
		},
		"disabled enlightenment without its dependency": func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Features.Hyperv.Synic = off()
			s.Domain.Features.Hyperv.Synictimer = nil
			s.Domain.Features.Hyperv.Vpindex = nil
			s.Domain.Features.Hyperv.IPI = nil
			s.Domain.Features.Hyperv.Tlbflush = nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := windowsSpec()
			mutate(&s)
			assert.Empty(t, ValidateVirtualMachineInstanceSpec(&s, field.NewPath("spec")))
		})
	}
	vm := &kubevirt.VirtualMachine{Spec: kubevirt.VirtualMachineSpec{Template: &kubevirt.VirtualMachineInstanceTemplateSpec{Spec: windowsSpec()}}}
	vm.Name = "win"
	vm.Namespace = "default"
	vm.Spec.Template.Spec.Domain.Features.SMM = nil
	assert.Contains(t, errsOf(ValidateVirtualMachine(vm)), wantErr{field.ErrorTypeRequired, "spec.template.spec.domain.features.smm"})
}
