package domain

import (
	"fmt"
	"strconv"

	"libvirt.org/go/libvirtxml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// The firmware Debian's ovmf package installs (in the launcher image, never the host's):
// 4 MiB builds, the Secure Boot one with SMM, and variable stores with no keys or with
// Microsoft's keys enrolled (Debian's shim is signed by Microsoft, as are Windows' loaders).
const (
	OVMFCode           = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	OVMFVars           = "/usr/share/OVMF/OVMF_VARS_4M.fd"
	OVMFSecureBootCode = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
	OVMFSecureBootVars = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
)

// GuestAgentChannel is the virtio-serial port qemu-guest-agent opens in the guest.
const GuestAgentChannel = "org.qemu.guest_agent.0"

// Firmware is the OVMF files of an EFI guest.
type Firmware struct {
	Code, Vars                     string
	SecureBootCode, SecureBootVars string
}

// DefaultFirmware is Debian's OVMF.
var DefaultFirmware = Firmware{Code: OVMFCode, Vars: OVMFVars, SecureBootCode: OVMFSecureBootCode, SecureBootVars: OVMFSecureBootVars}

// setBootloader makes an EFI guest boot OVMF, read-only, with its variables in the layout's
// NVRAM file (libvirt copies the template there the first time), and a BIOS guest print
// SeaBIOS's output on the serial console when asked.
func setBootloader(d *libvirtxml.Domain, vmi *v1.VirtualMachineInstance, opts Options) error {
	spec := &vmi.Spec
	fw := spec.Domain.Firmware
	if fw == nil || fw.Bootloader == nil {
		return nil
	}
	if bios := fw.Bootloader.BIOS; bios != nil && bios.UseSerial != nil && *bios.UseSerial {
		if len(d.Devices.Serials) == 0 {
			return fmt.Errorf("bootloader.bios.useSerial needs the serial console (autoattachSerialConsole)")
		}
		d.OS.BIOS = &libvirtxml.DomainBIOS{UseSerial: "yes"}
	}
	if fw.Bootloader.EFI == nil {
		return nil
	}
	files := opts.Firmware
	if files == (Firmware{}) {
		files = DefaultFirmware
	}
	loader := &libvirtxml.DomainLoader{Path: files.Code, Readonly: "yes", Secure: "no", Type: "pflash"}
	nvram := &libvirtxml.DomainNVRam{NVRam: opts.Layout.NVRAM(vmi.Name), Template: files.Vars}
	if spec.SecureBoot() {
		// secure='yes': only SMM code may write the flash, so the guest cannot replace the
		// enrolled keys; QEMU refuses this firmware without SMM.
		loader.Path, loader.Secure = files.SecureBootCode, "yes"
		nvram.Template = files.SecureBootVars
	}
	d.OS.Loader, d.OS.NVRam = loader, nvram
	return nil
}

// setFeatures sets the hypervisor features: ACPI (default on), APIC, SMM, and, under KVM
// only, Hyper-V enlightenments, KVM hiding and paravirtual spinlocks (KVMOnlyFeatures).
func setFeatures(d *libvirtxml.Domain, spec *v1.DomainSpec, emulation bool) {
	f := spec.Features
	list := &libvirtxml.DomainFeatureList{}
	if f == nil || f.ACPI.Enabled == nil || *f.ACPI.Enabled {
		list.ACPI = &libvirtxml.DomainFeature{}
	}
	if f != nil {
		if f.APIC != nil && f.APIC.IsEnabled() {
			list.APIC = &libvirtxml.DomainFeatureAPIC{}
			if f.APIC.EndOfInterrupt && !emulation {
				list.APIC.EOI = "on"
			}
		}
		if f.SMM.IsEnabled() {
			list.SMM = &libvirtxml.DomainFeatureSMM{State: "on"}
		}
		if !emulation {
			if f.Hyperv != nil {
				list.HyperV = hyperv(f.Hyperv)
			}
			if f.KVM != nil {
				list.KVM = &libvirtxml.DomainFeatureKVM{Hidden: &libvirtxml.DomainFeatureState{State: onOff(f.KVM.Hidden)}}
			}
			if f.Pvspinlock != nil {
				list.PVSpinlock = &libvirtxml.DomainFeatureState{State: onOff(f.Pvspinlock.IsEnabled())}
			}
		}
	}
	if *list != (libvirtxml.DomainFeatureList{}) {
		d.Features = list
	}
}

func hyperv(h *v1.FeatureHyperv) *libvirtxml.DomainFeatureHyperV {
	state := func(s *v1.FeatureState) *libvirtxml.DomainFeatureState {
		if s == nil {
			return nil
		}
		return &libvirtxml.DomainFeatureState{State: onOff(s.IsEnabled())}
	}
	out := &libvirtxml.DomainFeatureHyperV{
		Relaxed: state(h.Relaxed), VAPIC: state(h.VAPIC), VPIndex: state(h.Vpindex), Runtime: state(h.Runtime),
		Synic: state(h.Synic), Reset: state(h.ResetFeature), Frequencies: state(h.Frequencies),
		ReEnlightenment: state(h.Reenlightenment), IPI: state(h.IPI), EVMCS: state(h.EVMCS),
	}
	if s := h.Spinlocks; s != nil {
		out.Spinlocks = &libvirtxml.DomainFeatureHyperVSpinlocks{DomainFeatureState: *state(&s.FeatureState)}
		if s.IsEnabled() {
			retries := v1.DefaultSpinlocks
			if s.Spinlocks != nil {
				retries = *s.Spinlocks
			}
			out.Spinlocks.Retries = uint(retries)
		}
	}
	if v := h.Vendorid; v != nil {
		out.VendorId = &libvirtxml.DomainFeatureHyperVVendorId{DomainFeatureState: *state(&v.FeatureState)}
		if v.IsEnabled() {
			out.VendorId.Value = v.Vendorid
		}
	}
	if t := h.Synictimer; t != nil {
		out.STimer = &libvirtxml.DomainFeatureHyperVSTimer{DomainFeatureState: *state(&t.FeatureState), Direct: state(t.Direct)}
	}
	if t := h.Tlbflush; t != nil {
		out.TLBFlush = &libvirtxml.DomainFeatureHyperVTLBFlush{DomainFeatureState: *state(&t.FeatureState),
			Direct: state(t.Direct), Extended: state(t.Extended)}
	}
	return out
}

// setClock sets the clock's offset and timers as KubeVirt does: UTC without an offset resets
// to the host's time at every boot; the KVM-only clocks are left out under emulation.
func setClock(d *libvirtxml.Domain, spec *v1.DomainSpec, emulation bool) {
	c := spec.Clock
	if c == nil {
		return
	}
	clock := &libvirtxml.DomainClock{Offset: "utc"}
	switch {
	case c.UTC != nil && c.UTC.OffsetSeconds != nil:
		clock.Adjustment = strconv.Itoa(*c.UTC.OffsetSeconds)
	case c.UTC != nil:
		clock.Adjustment = "reset"
	case c.Timezone != nil:
		clock.Offset, clock.TimeZone = "timezone", string(*c.Timezone)
	}
	if t := c.Timer; t != nil {
		present := func(p *bool) string { return yesNo(p == nil || *p) }
		if r := t.RTC; r != nil {
			clock.Timer = append(clock.Timer, libvirtxml.DomainTimer{Name: "rtc", Track: string(r.Track), TickPolicy: string(r.TickPolicy), Present: present(r.Present)})
		}
		if p := t.PIT; p != nil {
			clock.Timer = append(clock.Timer, libvirtxml.DomainTimer{Name: "pit", TickPolicy: string(p.TickPolicy), Present: present(p.Present)})
		}
		if k := t.KVM; k != nil && !emulation {
			clock.Timer = append(clock.Timer, libvirtxml.DomainTimer{Name: "kvmclock", Present: present(k.Present)})
		}
		if h := t.HPET; h != nil {
			clock.Timer = append(clock.Timer, libvirtxml.DomainTimer{Name: "hpet", TickPolicy: string(h.TickPolicy), Present: present(h.Present)})
		}
		if h := t.Hyperv; h != nil && !emulation {
			clock.Timer = append(clock.Timer, libvirtxml.DomainTimer{Name: "hypervclock", Present: present(h.Present)})
		}
	}
	d.Clock = clock
}

// setInputs adds the input devices: a tablet gives the VNC pointer absolute coordinates.
func setInputs(d *libvirtxml.Domain, spec *v1.DomainSpec) {
	for _, in := range spec.Devices.Inputs {
		bus := string(in.Bus)
		if bus == "" {
			bus = string(v1.InputBusUSB)
		}
		d.Devices.Inputs = append(d.Devices.Inputs, libvirtxml.DomainInput{
			Type: string(in.Type), Bus: bus, Alias: &libvirtxml.DomainAlias{Name: "ua-" + in.Name},
		})
	}
}

// setUSBController leaves the guest without a USB controller unless a device sits on USB, as
// KubeVirt does: libvirt would otherwise add a qemu-xhci controller to every q35 guest, one more
// PCI device for the firmware and the kernel to probe at every boot.
func setUSBController(d *libvirtxml.Domain) {
	for _, in := range d.Devices.Inputs {
		if in.Bus == string(v1.InputBusUSB) {
			return
		}
	}
	for _, disk := range d.Devices.Disks {
		if disk.Target != nil && disk.Target.Bus == string(v1.DiskBusUSB) {
			return
		}
	}
	index := uint(0)
	d.Devices.Controllers = append(d.Devices.Controllers, libvirtxml.DomainController{Type: "usb", Index: &index, Model: "none"})
}

// setTPM adds an emulated TPM 2.0: libvirt starts swtpm for it, as the launcher's user, with
// its state below the session's configuration directory (which the launcher points at the
// state claim when the TPM is persistent). KubeVirt's models: TIS, CRB when persistent.
func setTPM(d *libvirtxml.Domain, spec *v1.VirtualMachineInstanceSpec) {
	if !spec.HasTPM() {
		return
	}
	tpm := libvirtxml.DomainTPM{Model: "tpm-tis", Backend: &libvirtxml.DomainTPMBackend{
		Emulator: &libvirtxml.DomainTPMBackendEmulator{Version: "2.0"},
	}}
	if spec.PersistentTPM() {
		tpm.Model = "tpm-crb"
		tpm.Backend.Emulator.PersistentState = "yes"
	}
	d.Devices.TPMs = append(d.Devices.TPMs, tpm)
}

// setGuestAgentChannel adds the virtio-serial port of qemu-guest-agent, as KubeVirt does for
// every guest: QEMU listens on a socket in the launcher's private directory, and libvirt
// (the launcher's) talks to the agent through it. Nothing outside the pod reaches it.
func setGuestAgentChannel(d *libvirtxml.Domain, l Layout) {
	d.Devices.Channels = append(d.Devices.Channels, libvirtxml.DomainChannel{
		Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: l.GuestAgentSocket}},
		Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: GuestAgentChannel}},
	})
}

// setCPUFeatures adds the spec's CPU features. libvirt takes features only with a model, so
// a guest under emulation without one gets QEMU's default model by name.
func setCPUFeatures(cpu *libvirtxml.DomainCPU, spec *v1.DomainSpec) {
	if spec.CPU == nil || len(spec.CPU.Features) == 0 {
		return
	}
	for _, f := range spec.CPU.Features {
		policy := f.Policy
		if policy == "" {
			policy = "require"
		}
		cpu.Features = append(cpu.Features, libvirtxml.DomainCPUFeature{Name: f.Name, Policy: policy})
	}
	if cpu.Mode == "" {
		cpu.Mode, cpu.Match = "custom", "exact"
		cpu.Model = &libvirtxml.DomainCPUModel{Value: "qemu64", Fallback: "allow"}
	}
}

// queues is the number of queues of a multi-queue virtio device: one per vCPU, as KubeVirt.
func queues(d *libvirtxml.Domain) uint {
	if d.VCPU == nil || d.VCPU.Value < 1 {
		return 1
	}
	return min(d.VCPU.Value, MaxQueues)
}

// MaxQueues bounds the queues of a device: virtio-blk and virtio-net take at most 256 (and
// KubeVirt caps a NIC's at 256 as well).
const MaxQueues = 256

// virtioModel is the model of a virtio device: the spec's useVirtioTransitional makes it one
// that old guests (virtio 0.9 drivers) still find.
func virtioModel(spec *v1.DomainSpec) string {
	if t := spec.Devices.UseVirtioTransitional; t != nil && *t {
		return "virtio-transitional"
	}
	return "virtio"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// MultiQueueInterface says whether an interface gets one queue per vCPU: a virtio NIC of a
// guest with networkInterfaceMultiqueue and more than one vCPU. Its tap must then be made
// multi-queue (the network setup asks this too), or QEMU cannot open it more than once.
func MultiQueueInterface(vmi *v1.VirtualMachineInstance, iface v1.Interface) bool {
	mq := vmi.Spec.Domain.Devices.NetworkInterfaceMultiqueue
	if mq == nil || !*mq || (iface.Model != "" && iface.Model != v1.DefaultInterfaceModel) {
		return false
	}
	return vmi.Spec.Domain.VCPUs() > 1
}
