package domain

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// HotplugDisk is the libvirt disk of a volume hotplugged into a running guest: disk's device
// on the SCSI bus (as KubeVirt hotplugs, the only bus Hangar's domains can take disks on
// while running), its raw data read from source (the fd set of the descriptors virt-handler
// handed over, /dev/fdset/<id>: docs/hotplug.md), a block device's when block, and the first
// SCSI target name that used (the domain's targets) does not hold.
func HotplugDisk(disk v1.Disk, source string, block bool, used map[string]bool) (libvirtxml.DomainDisk, error) {
	if disk.CDRom != nil {
		return libvirtxml.DomainDisk{}, fmt.Errorf("disk %s: a CD-ROM cannot be hotplugged", disk.Name)
	}
	if disk.Disk == nil {
		disk.Disk = &v1.DiskTarget{Bus: v1.DiskBusSCSI}
	}
	if disk.Disk.Bus != v1.DiskBusSCSI {
		return libvirtxml.DomainDisk{}, fmt.Errorf("disk %s: a hotplugged disk is on the scsi bus, not %q", disk.Name, disk.Disk.Bus)
	}
	dd, err := diskDevice(disk)
	if err != nil {
		return dd, err
	}
	dd.Boot = nil // a running guest booted already
	dd.Driver = &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"}
	if block {
		dd.Source = &libvirtxml.DomainDiskSource{Block: &libvirtxml.DomainDiskSourceBlock{Dev: source}}
	} else {
		dd.Source = &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: source}}
	}
	for n := 0; ; n++ {
		if name := "sd" + deviceSuffix(n); !used[name] {
			dd.Target.Dev = name
			return dd, nil
		}
	}
}
