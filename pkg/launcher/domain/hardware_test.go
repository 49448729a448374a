package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func enabled() *v1.FeatureState  { return &v1.FeatureState{} }
func disabled() *v1.FeatureState { return &v1.FeatureState{Enabled: ptr.To(false)} }

// withWindows is KubeVirt's Windows example (examples/vmi-windows.yaml) plus the
// enlightenments it leaves out.
func withWindows(v *v1.VirtualMachineInstance) {
	v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{SecureBoot: ptr.To(true)}}}
	v.Spec.Domain.Features = &v1.Features{
		SMM: enabled(), APIC: &v1.FeatureAPIC{},
		Hyperv: &v1.FeatureHyperv{
			Relaxed: enabled(), VAPIC: enabled(), Spinlocks: &v1.FeatureSpinlocks{Spinlocks: ptr.To[uint32](8191)},
			Synictimer: &v1.SyNICTimer{Direct: enabled()}, Runtime: enabled(), ResetFeature: enabled(), Frequencies: enabled(),
			Reenlightenment: enabled(), IPI: enabled(), Tlbflush: &v1.TLBFlush{}, Vendorid: &v1.FeatureVendorID{Vendorid: "KubeVirt"},
		},
	}
	v.Spec.Domain.Clock = &v1.Clock{
		ClockOffset: v1.ClockOffset{UTC: &v1.ClockOffsetUTC{}},
		Timer: &v1.Timer{
			HPET: &v1.HPETTimer{Present: ptr.To(false)}, Hyperv: &v1.HypervTimer{},
			PIT: &v1.PITTimer{TickPolicy: v1.PITTickPolicyDelay}, RTC: &v1.RTCTimer{TickPolicy: v1.RTCTickPolicyCatchup},
		},
	}
	v.Spec.Domain.Devices.TPM = &v1.TPMDevice{}
	v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default", Model: "e1000",
		InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}}
}

func TestConvertGuestHardware(t *testing.T) {
	kvm := func(o *Options) { o.UseEmulation = false }
	tests := []struct {
		name    string
		vmi     *v1.VirtualMachineInstance
		opts    func(*Options)
		want    []string
		notWant []string
	}{
		{
			name: "every guest gets the guest agent's channel",
			vmi:  testVMI(),
			want: []string{`<channel type="unix"><source mode="bind" path="/run/hangar/guest-agent.sock"></source><target type="virtio" name="org.qemu.guest_agent.0"></target></channel>`},
		},
		{
			name: "EFI with Secure Boot (the default): the SMM build, Microsoft's keys, per-VM NVRAM",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{}}}
				v.Spec.Domain.Features = &v1.Features{SMM: &v1.FeatureState{}}
			}),
			want: []string{
				`<loader readonly="yes" secure="yes" type="pflash">/usr/share/OVMF/OVMF_CODE_4M.secboot.fd</loader>` +
					`<nvram template="/usr/share/OVMF/OVMF_VARS_4M.ms.fd">/run/hangar/nvram/guest_VARS.fd</nvram>`,
				`<features><acpi></acpi><smm state="on"></smm></features>`,
			},
		},
		{
			name: "EFI without Secure Boot: the plain build and an empty variable store",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{SecureBoot: ptr.To(false)}}}
			}),
			want: []string{`<loader readonly="yes" secure="no" type="pflash">/usr/share/OVMF/OVMF_CODE_4M.fd</loader>` +
				`<nvram template="/usr/share/OVMF/OVMF_VARS_4M.fd">/run/hangar/nvram/guest_VARS.fd</nvram>`},
			notWant: []string{`<smm`},
		},
		{
			name: "BIOS output on the serial console",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{BIOS: &v1.BIOS{UseSerial: ptr.To(true)}}}
			}),
			want:    []string{`<bios useserial="yes"></bios>`},
			notWant: []string{`<loader`, `<nvram`},
		},
		{
			name: "Windows under KVM: enlightenments, clock, TPM, e1000",
			vmi:  testVMI(withWindows),
			opts: kvm,
			want: []string{
				`<features><acpi></acpi><apic></apic><hyperv><relaxed state="on"></relaxed><vapic state="on"></vapic><spinlocks state="on" retries="8191"></spinlocks>` +
					`<vpindex state="on"></vpindex><runtime state="on"></runtime><synic state="on"></synic><stimer state="on"><direct state="on"></direct></stimer>` +
					`<reset state="on"></reset><vendor_id state="on" value="KubeVirt"></vendor_id><frequencies state="on"></frequencies>` +
					`<reenlightenment state="on"></reenlightenment><tlbflush state="on"></tlbflush><ipi state="on"></ipi></hyperv><smm state="on"></smm></features>`,
				`<clock offset="utc" adjustment="reset"><timer name="rtc" tickpolicy="catchup" present="yes"></timer><timer name="pit" tickpolicy="delay" present="yes"></timer>` +
					`<timer name="hpet" present="no"></timer><timer name="hypervclock" present="yes"></timer></clock>`,
				`<tpm model="tpm-tis"><backend type="emulator" version="2.0"></backend></tpm>`,
				`<model type="e1000"></model>`,
			},
		},
		{
			name: "Windows under emulation: the KVM-only features are dropped, the rest stays",
			vmi:  testVMI(withWindows),
			want: []string{
				`<features><acpi></acpi><apic></apic><smm state="on"></smm></features>`,
				`<clock offset="utc" adjustment="reset"><timer name="rtc" tickpolicy="catchup" present="yes"></timer><timer name="pit" tickpolicy="delay" present="yes"></timer><timer name="hpet" present="no"></timer></clock>`,
				`<loader readonly="yes" secure="yes" type="pflash">/usr/share/OVMF/OVMF_CODE_4M.secboot.fd</loader>`,
				`<tpm model="tpm-tis">`,
			},
			notWant: []string{`<hyperv`, `hypervclock`},
		},
		{
			name: "KVM-only extras: hidden KVM, pvspinlock, kvmclock, EOI",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Features = &v1.Features{KVM: &v1.FeatureKVM{Hidden: true}, Pvspinlock: disabled(), APIC: &v1.FeatureAPIC{EndOfInterrupt: true}}
				v.Spec.Domain.Clock = &v1.Clock{Timer: &v1.Timer{KVM: &v1.KVMTimer{}}}
			}),
			opts: kvm,
			want: []string{`<features><acpi></acpi><apic eoi="on"></apic><kvm><hidden state="on"></hidden></kvm><pvspinlock state="off"></pvspinlock></features>`,
				`<clock offset="utc"><timer name="kvmclock" present="yes"></timer></clock>`},
		},
		{
			name: "KVM-only extras under emulation",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Features = &v1.Features{KVM: &v1.FeatureKVM{Hidden: true}, Pvspinlock: enabled(), APIC: &v1.FeatureAPIC{EndOfInterrupt: true}}
				v.Spec.Domain.Clock = &v1.Clock{Timer: &v1.Timer{KVM: &v1.KVMTimer{}}}
			}),
			want:    []string{`<features><acpi></acpi><apic></apic></features>`, `<clock offset="utc"></clock>`},
			notWant: []string{`<kvm>`, `pvspinlock`, `kvmclock`, `eoi`},
		},
		{
			name: "time zone and a disabled APIC",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Clock = &v1.Clock{ClockOffset: v1.ClockOffset{Timezone: ptr.To[v1.ClockOffsetTimezone]("Europe/Paris")}}
				v.Spec.Domain.Features = &v1.Features{APIC: &v1.FeatureAPIC{FeatureState: *disabled()}}
			}),
			want:    []string{`<clock offset="timezone" timezone="Europe/Paris"></clock>`},
			notWant: []string{`<apic`},
		},
		{
			name: "UTC with an offset the guest may change",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Clock = &v1.Clock{ClockOffset: v1.ClockOffset{UTC: &v1.ClockOffsetUTC{OffsetSeconds: ptr.To(-3600)}}}
			}),
			want: []string{`<clock offset="utc" adjustment="-3600"></clock>`},
		},
		{
			name: "persistent TPM: CRB with persistent state, as KubeVirt",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.TPM = &v1.TPMDevice{Persistent: ptr.To(true)}
			}),
			want: []string{`<tpm model="tpm-crb"><backend type="emulator" version="2.0" persistent_state="yes"></backend></tpm>`},
		},
		{
			name:    "disabled TPM",
			vmi:     testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.TPM = &v1.TPMDevice{Enabled: ptr.To(false)} }),
			notWant: []string{`<tpm`},
		},
		{
			name: "tablets on USB (the default) and virtio, and the one autoattachInputDevice adds",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "t1"}, {Name: "t2", Bus: v1.InputBusVirtio}}
			}),
			want:    []string{`<input type="tablet" bus="usb"><alias name="ua-t1"></alias></input><input type="tablet" bus="virtio"><alias name="ua-t2"></alias></input>`},
			notWant: []string{`<controller type="usb" index="0" model="none">`},
		},
		{
			name: "no USB device: no USB controller, as KubeVirt's guests",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "t2", Bus: v1.InputBusVirtio}}
			}),
			want: []string{`<controller type="usb" index="0" model="none"></controller>`},
		},
		{
			name:    "a disk on USB keeps the USB controller",
			vmi:     testVMI(withClaimDisk(v1.Disk{Name: "stick", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusUSB}}})),
			want:    []string{`<target dev="sda" bus="usb"></target>`},
			notWant: []string{`<controller type="usb" index="0" model="none">`},
		},
		{
			name: "autoattachInputDevice",
			vmi:  testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachInputDevice = ptr.To(true) }),
			want: []string{`<input type="tablet" bus="usb"><alias name="ua-default-0"></alias></input>`},
		},
		{
			name: "CPU features on a named model, and on QEMU's default model under emulation",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.CPU = &v1.CPU{Features: []v1.CPUFeature{{Name: "pcid"}, {Name: "svm", Policy: "disable"}}}
			}),
			want: []string{`<cpu match="exact" mode="custom"><model fallback="allow">qemu64</model><topology sockets="1" cores="1" threads="1"></topology>` +
				`<feature policy="require" name="pcid"></feature><feature policy="disable" name="svm"></feature></cpu>`},
		},
		{
			name: "CPU features on host-model under KVM",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.CPU = &v1.CPU{Features: []v1.CPUFeature{{Name: "pcid", Policy: "force"}}}
			}),
			opts: kvm,
			want: []string{`<cpu mode="host-model"><topology sockets="1" cores="1" threads="1"></topology><feature policy="force" name="pcid"></feature></cpu>`},
		},
		{
			name: "virtio-transitional devices for old guests",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				withAllVolumes(v)
				v.Spec.Domain.Devices.UseVirtioTransitional = ptr.To(true)
				v.Spec.Domain.Devices.Rng = &v1.Rng{}
			}),
			want: []string{
				`<disk type="file" device="disk" model="virtio-transitional"><driver name="qemu" type="qcow2"></driver>`,
				`<model type="virtio-transitional"></model></interface>`,
				`<rng model="virtio-transitional">`,
				// SATA and SCSI disks have no virtio model.
				`<disk type="file" device="disk"><driver name="qemu" type="raw"></driver><source file="/run/hangar/ephemeral/empty-disks/scratch.img">`,
			},
		},
		{
			name: "multi-queue disks and NICs: one queue per vCPU",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				withAllVolumes(v)
				v.Spec.Domain.CPU = &v1.CPU{Cores: 2, Sockets: 2}
				v.Spec.Domain.Devices.BlockMultiQueue = ptr.To(true)
				v.Spec.Domain.Devices.NetworkInterfaceMultiqueue = ptr.To(true)
			}),
			want: []string{
				`<driver name="qemu" type="qcow2" queues="4"></driver><source file="/run/hangar/ephemeral/container-disks/root.qcow2">`,
				`<model type="virtio"></model><driver queues="4"></driver></interface>`,
				`<driver name="qemu" type="raw"></driver><source file="/run/hangar/ephemeral/empty-disks/scratch.img">`,
			},
		},
		{
			name: "multi-queue with one vCPU is one queue: nothing to ask",
			vmi: testVMI(func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.NetworkInterfaceMultiqueue = ptr.To(true)
			}),
			notWant: []string{`queues=`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			got := domainXML(t, tt.vmi, opts)
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, got, w)
			}
		})
	}
}

func TestConvertGuestHardwareErrors(t *testing.T) {
	serial := testVMI(func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{BIOS: &v1.BIOS{UseSerial: ptr.To(true)}}}
		v.Spec.Domain.Devices.AutoattachSerialConsole = ptr.To(false)
	})
	_, err := Convert(serial, testOptions())
	require.ErrorContains(t, err, "useSerial needs the serial console")
}

func TestKVMOnlyFeatures(t *testing.T) {
	assert.Equal(t, []string{"domain.features.hyperv", "domain.clock.timer.hyperv"}, testVMI(withWindows).Spec.KVMOnlyFeatures())
	assert.Empty(t, testVMI().Spec.KVMOnlyFeatures())
	off := testVMI(func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Features = &v1.Features{Pvspinlock: disabled()}
		v.Spec.Domain.Clock = &v1.Clock{Timer: &v1.Timer{KVM: &v1.KVMTimer{Present: ptr.To(false)}}}
	})
	assert.Empty(t, off.Spec.KVMOnlyFeatures(), "what is turned off is not missed")
}
