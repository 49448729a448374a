package domain

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// setDisks adds one libvirt disk per spec disk, in spec order, backed by its volume.
func setDisks(d *libvirtxml.Domain, vmi *v1.VirtualMachineInstance, opts Options) error {
	volumes := make(map[string]*v1.Volume, len(vmi.Spec.Volumes))
	for i := range vmi.Spec.Volumes {
		volumes[vmi.Spec.Volumes[i].Name] = &vmi.Spec.Volumes[i]
	}
	names := targetNames{}
	for _, disk := range vmi.Spec.Domain.Devices.Disks {
		vol, ok := volumes[disk.Name]
		if !ok {
			return fmt.Errorf("disk %s: no volume of that name", disk.Name)
		}
		dd, err := diskDevice(disk)
		if err != nil {
			return err
		}
		if err := setDiskSource(&dd, vol, opts); err != nil {
			return fmt.Errorf("disk %s: %w", disk.Name, err)
		}
		dd.Target.Dev = names.next(dd.Target.Bus)
		if dd.Target.Bus == string(v1.DiskBusVirtio) {
			if m := virtioModel(&vmi.Spec.Domain); m != "virtio" {
				dd.Model = m
			}
			if mq := vmi.Spec.Domain.Devices.BlockMultiQueue; mq != nil && *mq && dd.Driver != nil {
				dd.Driver.Queues = ptrUint(queues(d))
			}
		}
		d.Devices.Disks = append(d.Devices.Disks, dd)
	}
	// Always a SCSI controller, as KubeVirt's domains have: hotplugged disks go on it, and a
	// running guest cannot be given a controller.
	index := uint(0)
	d.Devices.Controllers = append(d.Devices.Controllers, libvirtxml.DomainController{
		Type: "scsi", Index: &index, Model: "virtio-scsi",
	})
	return nil
}

// diskDevice is the device part of a disk: kind, bus, read-only, boot order, serial.
func diskDevice(disk v1.Disk) (libvirtxml.DomainDisk, error) {
	dd := libvirtxml.DomainDisk{Device: "disk", Target: &libvirtxml.DomainDiskTarget{}, Serial: disk.Serial}
	switch {
	case disk.CDRom != nil:
		dd.Device = "cdrom"
		dd.Target.Bus = string(disk.CDRom.Bus)
		if dd.Target.Bus == "" {
			dd.Target.Bus = string(v1.DiskBusSATA)
		}
		if dd.Target.Bus == string(v1.DiskBusVirtio) {
			return dd, fmt.Errorf("disk %s: a CD-ROM cannot be on the virtio bus", disk.Name)
		}
		if disk.CDRom.ReadOnly == nil || *disk.CDRom.ReadOnly {
			dd.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
		}
	case disk.Disk != nil:
		dd.Target.Bus = string(disk.Disk.Bus)
		if dd.Target.Bus == "" {
			dd.Target.Bus = string(v1.DiskBusVirtio)
		}
		if disk.Disk.ReadOnly {
			dd.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
		}
	default:
		return dd, fmt.Errorf("disk %s: neither disk nor cdrom", disk.Name)
	}
	switch v1.DiskBus(dd.Target.Bus) {
	case v1.DiskBusVirtio, v1.DiskBusSATA, v1.DiskBusSCSI, v1.DiskBusUSB:
	default:
		return dd, fmt.Errorf("disk %s: unknown bus %q", disk.Name, dd.Target.Bus)
	}
	if disk.BootOrder != nil {
		dd.Boot = &libvirtxml.DomainDeviceBoot{Order: *disk.BootOrder}
	}
	return dd, nil
}

// setDiskSource points the disk at its volume's data.
func setDiskSource(dd *libvirtxml.DomainDisk, vol *v1.Volume, opts Options) error {
	l := opts.Layout
	file := func(path, format string) {
		dd.Driver = &libvirtxml.DomainDiskDriver{Name: "qemu", Type: format}
		dd.Source = &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: path}}
	}
	switch {
	case vol.ContainerDisk != nil:
		img, ok := opts.ContainerDisks[vol.Name]
		if !ok {
			return fmt.Errorf("containerDisk %s: the launcher found no image file", vol.Name)
		}
		// The image is shared and read-only; the guest writes to a qcow2 overlay whose
		// backing file it is. libvirt reads the chain from the overlay's header; the
		// backingStore here says the same, for whoever reads the XML.
		file(l.ContainerDiskOverlay(vol.Name), "qcow2")
		dd.BackingStore = &libvirtxml.DomainDiskBackingStore{
			Format: &libvirtxml.DomainDiskFormat{Type: img.Format},
			Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: img.Path}},
		}
	case vol.CloudInitNoCloud != nil:
		file(l.CloudInitISO(vol.Name), "raw")
	case vol.EmptyDisk != nil:
		file(l.EmptyDisk(vol.Name), "raw")
	case vol.PersistentVolumeClaim != nil, vol.DataVolume != nil: // a DataVolume is its claim
		if opts.BlockVolumes[vol.Name] {
			dd.Driver = &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"}
			dd.Source = &libvirtxml.DomainDiskSource{Block: &libvirtxml.DomainDiskSourceBlock{Dev: l.PVCBlock(vol.Name)}}
		} else {
			file(l.PVCFile(vol.Name), "raw")
		}
	default:
		return fmt.Errorf("volume %s: unsupported volume source", vol.Name)
	}
	return nil
}

// targetNames hands out guest device names per bus family, as KubeVirt does: vda, vdb, ...
// for virtio, sda, sdb, ... for everything that shows up as SCSI disks in the guest.
type targetNames map[string]int

func (t targetNames) next(bus string) string {
	prefix := "sd"
	if bus == string(v1.DiskBusVirtio) {
		prefix = "vd"
	}
	n := t[prefix]
	t[prefix] = n + 1
	return prefix + deviceSuffix(n)
}

// deviceSuffix is Linux's disk naming: 0 → a, 25 → z, 26 → aa.
func deviceSuffix(n int) string {
	s := ""
	for n >= 0 {
		s = string(rune('a'+n%26)) + s
		n = n/26 - 1
	}
	return s
}

func ptrUint(n uint) *uint { return &n }
