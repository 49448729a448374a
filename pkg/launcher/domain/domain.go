// Package domain converts a VirtualMachineInstance, as virt-api defaulted it, into the
// libvirt domain that runs it. It is pure: the files and devices the domain refers to are
// named by a Layout and by Options the launcher fills in, never touched here.
package domain

import (
	"crypto/sha256"
	"fmt"
	"net"
	"strings"

	"libvirt.org/go/libvirtxml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// DefaultEmulator is Debian's QEMU for x86_64 guests.
const DefaultEmulator = "/usr/bin/qemu-system-x86_64"

// Options is what the converter needs beside the instance: the launcher's choices and what
// it found on disk.
type Options struct {
	// UseEmulation runs the guest under QEMU's TCG (<domain type='qemu'>) instead of KVM.
	UseEmulation bool
	// Emulator is the QEMU binary; DefaultEmulator when empty.
	Emulator string
	// Layout names the files the domain refers to.
	Layout Layout
	// KernelBootRoot is where the files of spec.domain.firmware.kernelBoot's image are.
	KernelBootRoot string
	// ContainerDisks is, per containerDisk volume, the image file the launcher found in the
	// volume's container image. The guest writes to an overlay (Layout.ContainerDiskOverlay).
	ContainerDisks map[string]Image
	// BlockVolumes are the persistentVolumeClaim volumes that are block devices; the others
	// are image files on a filesystem.
	BlockVolumes map[string]bool
	// Taps is, per interface name, the tap device the network setup made for it.
	Taps map[string]string
	// MACs is, per interface name, the guest MAC the network setup chose (the bridge binding
	// hands over the pod interface's); MACAddress for the others.
	MACs map[string]string
	// Firmware is the OVMF files of EFI guests; DefaultFirmware when empty.
	Firmware Firmware
}

// Image is a disk image file and its format (qcow2 or raw).
type Image struct {
	Path   string
	Format string
}

// Name is the libvirt domain name of an instance, as KubeVirt names it.
func Name(vmi *v1.VirtualMachineInstance) string {
	return vmi.Namespace + "_" + vmi.Name
}

// Convert returns the domain that runs vmi.
func Convert(vmi *v1.VirtualMachineInstance, opts Options) (*libvirtxml.Domain, error) {
	spec := &vmi.Spec.Domain
	emulator := opts.Emulator
	if emulator == "" {
		emulator = DefaultEmulator
	}
	d := &libvirtxml.Domain{
		Type:       "kvm",
		Name:       Name(vmi),
		UUID:       domainUUID(vmi),
		Clock:      &libvirtxml.DomainClock{Offset: "utc"},
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "destroy",
		Devices: &libvirtxml.DomainDeviceList{
			Emulator: emulator,
			// No balloon: nothing in Hangar resizes guests, and it is one device less to emulate.
			MemBalloon: &libvirtxml.DomainMemBalloon{Model: "none"},
		},
	}
	if opts.UseEmulation {
		d.Type = "qemu"
	}

	if err := setMemory(d, spec); err != nil {
		return nil, err
	}
	setCPU(d, spec, opts.UseEmulation)
	if err := setOS(d, vmi, opts); err != nil {
		return nil, err
	}
	setFeatures(d, spec, opts.UseEmulation)
	setClock(d, spec, opts.UseEmulation)
	if err := setDisks(d, vmi, opts); err != nil {
		return nil, err
	}
	if err := setInterfaces(d, vmi, opts); err != nil {
		return nil, err
	}
	setConsoleAndGraphics(d, spec, opts.Layout)
	if err := setBootloader(d, vmi, opts); err != nil {
		return nil, err
	}
	setInputs(d, spec)
	setTPM(d, &vmi.Spec)
	setGuestAgentChannel(d, opts.Layout)
	if spec.Devices.Rng != nil {
		d.Devices.RNGs = append(d.Devices.RNGs, libvirtxml.DomainRNG{
			Model:   virtioModel(spec),
			Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}},
		})
	}
	setUSBController(d)
	return d, nil
}

// domainUUID is the firmware UUID when the spec has one: the guest reads it back through
// SMBIOS, and libvirt requires the domain's UUID to match it. Otherwise the instance's UID.
func domainUUID(vmi *v1.VirtualMachineInstance) string {
	if fw := vmi.Spec.Domain.Firmware; fw != nil && fw.UUID != "" {
		return string(fw.UUID)
	}
	return string(vmi.UID)
}

func setMemory(d *libvirtxml.Domain, spec *v1.DomainSpec) error {
	if spec.Memory == nil || spec.Memory.Guest == nil {
		return fmt.Errorf("no guest memory (spec.domain.memory.guest); is the instance defaulted?")
	}
	kib := spec.Memory.Guest.Value() / 1024
	if kib <= 0 {
		return fmt.Errorf("guest memory %s is too small", spec.Memory.Guest.String())
	}
	d.Memory = &libvirtxml.DomainMemory{Value: uint(kib), Unit: "KiB"}
	return nil
}

func setCPU(d *libvirtxml.Domain, spec *v1.DomainSpec, emulation bool) {
	sockets, cores, threads := uint32(1), uint32(1), uint32(1)
	model := ""
	if c := spec.CPU; c != nil {
		sockets, cores, threads = orOne(c.Sockets), orOne(c.Cores), orOne(c.Threads)
		model = c.Model
	}
	d.VCPU = &libvirtxml.DomainVCPU{Placement: "static", Value: uint(spec.VCPUs())}
	cpu := &libvirtxml.DomainCPU{Topology: &libvirtxml.DomainCPUTopology{
		Sockets: int(sockets), Cores: int(cores), Threads: int(threads),
	}}
	switch {
	case emulation && (model == "" || model == "host-model" || model == "host-passthrough"):
		// TCG has no host CPU to pass through; QEMU's default model (qemu64) boots every
		// x86_64 kernel, which is what emulation is for.
	case model == "" || model == "host-model":
		cpu.Mode = "host-model"
	case model == "host-passthrough":
		cpu.Mode = "host-passthrough"
	default:
		cpu.Mode = "custom"
		cpu.Match = "exact"
		cpu.Model = &libvirtxml.DomainCPUModel{Value: model, Fallback: "allow"}
	}
	setCPUFeatures(cpu, spec)
	d.CPU = cpu
}

func orOne(n uint32) uint32 {
	if n == 0 {
		return 1
	}
	return n
}

func setOS(d *libvirtxml.Domain, vmi *v1.VirtualMachineInstance, opts Options) error {
	machine := v1.DefaultMachineType
	if m := vmi.Spec.Domain.Machine; m != nil && m.Type != "" {
		machine = m.Type
	}
	d.OS = &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: machine, Type: "hvm"}}

	fw := vmi.Spec.Domain.Firmware
	if fw == nil {
		return nil
	}
	var entries []libvirtxml.DomainSysInfoEntry
	if fw.UUID != "" {
		entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: "uuid", Value: string(fw.UUID)})
	}
	if fw.Serial != "" {
		entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: "serial", Value: fw.Serial})
	}
	if len(entries) > 0 {
		d.SysInfo = []libvirtxml.DomainSysInfo{{SMBIOS: &libvirtxml.DomainSysInfoSMBIOS{
			System: &libvirtxml.DomainSysInfoSystem{Entry: entries},
		}}}
		d.OS.SMBios = &libvirtxml.DomainSMBios{Mode: "sysinfo"}
	}

	if kb := fw.KernelBoot; kb != nil && kb.Container != nil {
		if kb.Container.KernelPath == "" {
			return fmt.Errorf("kernelBoot: container has no kernelPath")
		}
		if opts.KernelBootRoot == "" {
			return fmt.Errorf("kernelBoot: the launcher has no kernel boot image root")
		}
		d.OS.Kernel = UnderRoot(opts.KernelBootRoot, kb.Container.KernelPath)
		if kb.Container.InitrdPath != "" {
			d.OS.Initrd = UnderRoot(opts.KernelBootRoot, kb.Container.InitrdPath)
		}
		d.OS.Cmdline = kb.KernelArgs
	}
	return nil
}

func setConsoleAndGraphics(d *libvirtxml.Domain, spec *v1.DomainSpec, l Layout) {
	if a := spec.Devices.AutoattachSerialConsole; a == nil || *a {
		port := uint(0)
		// mode=bind: QEMU listens, the launcher dials. Output before the dial is lost, so the
		// launcher starts the domain paused and resumes it once connected.
		src := &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: l.SerialSocket}}
		d.Devices.Serials = append(d.Devices.Serials, libvirtxml.DomainSerial{
			Source: src, Target: &libvirtxml.DomainSerialTarget{Port: &port},
		})
		d.Devices.Consoles = append(d.Devices.Consoles, libvirtxml.DomainConsole{
			Source: src, Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: &port},
		})
	}
	if a := spec.Devices.AutoattachGraphicsDevice; a == nil || *a {
		d.Devices.Graphics = append(d.Devices.Graphics, libvirtxml.DomainGraphic{VNC: &libvirtxml.DomainGraphicVNC{
			Listeners: []libvirtxml.DomainGraphicListener{{Socket: &libvirtxml.DomainGraphicListenerSocket{Socket: l.VNCSocket}}},
		}})
		d.Devices.Videos = append(d.Devices.Videos, libvirtxml.DomainVideo{
			Model: libvirtxml.DomainVideoModel{Type: "vga", VRam: 16384, Heads: 1},
		})
	}
}

func setInterfaces(d *libvirtxml.Domain, vmi *v1.VirtualMachineInstance, opts Options) error {
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		tap, ok := opts.Taps[iface.Name]
		if !ok {
			return fmt.Errorf("interface %s: no tap device from the network setup", iface.Name)
		}
		model := iface.Model
		if model == "" || model == v1.DefaultInterfaceModel {
			model = virtioModel(&vmi.Spec.Domain)
		}
		di := libvirtxml.DomainInterface{
			Source: &libvirtxml.DomainInterfaceSource{Ethernet: &libvirtxml.DomainInterfaceSourceEthernet{}},
			// managed=no: the tap exists already (made with privileges the launcher lacks).
			Target: &libvirtxml.DomainInterfaceTarget{Dev: tap, Managed: "no"},
			MAC:    &libvirtxml.DomainInterfaceMAC{Address: MACAddress(vmi, iface)},
			Model:  &libvirtxml.DomainInterfaceModel{Type: model},
		}
		if mac := opts.MACs[iface.Name]; mac != "" {
			di.MAC.Address = mac
		}
		if iface.BootOrder != nil {
			di.Boot = &libvirtxml.DomainDeviceBoot{Order: *iface.BootOrder}
		}
		if MultiQueueInterface(vmi, iface) {
			// The tap was made multi-queue by the network setup (MultiQueueInterface too).
			di.Driver = &libvirtxml.DomainInterfaceDriver{Queues: queues(d)}
		}
		d.Devices.Interfaces = append(d.Devices.Interfaces, di)
	}
	return nil
}

// MACAddress is the interface's MAC: the spec's, else one derived from the instance's UID
// and the interface name, so it is the same after every restart of the launcher and the
// handler can report it without asking libvirt. 52:54:00 is QEMU's prefix.
//
// The spec's MAC is written as libvirt and the DHCP server expect it, lower-case with
// colons: validation accepts every MAC-48 spelling net.ParseMAC reads (de-ad-00-00-be-af,
// dead.0000.beaf), as KubeVirt does.
func MACAddress(vmi *v1.VirtualMachineInstance, iface v1.Interface) string {
	if iface.MacAddress != "" {
		if mac, err := net.ParseMAC(iface.MacAddress); err == nil {
			return mac.String()
		}
		return strings.ToLower(iface.MacAddress)
	}
	sum := sha256.Sum256([]byte(string(vmi.UID) + "/" + iface.Name))
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", sum[0], sum[1], sum[2])
}
