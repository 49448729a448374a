package domain

import (
	"path/filepath"

	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Layout is where a launcher keeps the files a domain refers to. The converter only names
// them; the launcher creates them (overlays, empty disks, the cloud-init ISO) before it
// defines the domain.
type Layout struct {
	// EphemeralDir is a writable directory private to the launcher: containerDisk overlays,
	// empty disks and cloud-init ISOs live there and die with the launcher's container.
	EphemeralDir string
	// PVCDir holds one directory per filesystem persistentVolumeClaim volume, with the
	// image at <PVCDir>/<volume>/disk.img (KubeVirt's /var/run/kubevirt-private/vmi-disks).
	PVCDir string
	// BlockDir holds block persistentVolumeClaim volumes as <BlockDir>/<volume> (the pod's
	// volumeDevices devicePath; KubeVirt uses /dev/<volume>).
	BlockDir string
	// SerialSocket is the unix socket QEMU listens on for the serial console.
	SerialSocket string
	// VNCSocket is the unix socket QEMU listens on for VNC.
	VNCSocket string
	// GuestAgentSocket is the unix socket QEMU listens on for the guest agent's channel;
	// libvirt, the launcher's, talks to the agent through it.
	GuestAgentSocket string
	// NVRAMDir holds an EFI guest's variables: in the launcher's private directory, or on the
	// VM's state claim when they persist.
	NVRAMDir string
	// MigrationDir holds the unix sockets of a migration's streams: on the source the
	// launcher listens on them for libvirtd and QEMU, on the target QEMU listens on them.
	// libvirt uses one path on both ends, so it must be the same in every launcher pod.
	MigrationDir string
}

// MigrationSocket is the socket of a migration stream ("libvirt", "memory", "disks").
func (l Layout) MigrationSocket(stream string) string {
	return filepath.Join(l.MigrationDir, stream+".sock")
}

// DefaultLayout is the layout inside a launcher pod, with run as the launcher's private
// runtime directory.
func DefaultLayout(run string) Layout {
	return Layout{
		EphemeralDir: filepath.Join(run, "ephemeral"),
		PVCDir:       layout.PVCMountDir,
		BlockDir:     "/dev",
		SerialSocket: filepath.Join(run, "serial.sock"),
		VNCSocket:    filepath.Join(run, "vnc.sock"),

		GuestAgentSocket: filepath.Join(run, "guest-agent.sock"),
		NVRAMDir:         filepath.Join(run, "nvram"),
		MigrationDir:     filepath.Join(run, "migration"),
	}
}

// NVRAM is the file of an EFI guest's variables, named as KubeVirt names it.
func (l Layout) NVRAM(vmiName string) string {
	return filepath.Join(l.NVRAMDir, vmiName+"_VARS.fd")
}

// ContainerDiskOverlay is the qcow2 overlay that takes a containerDisk volume's writes.
func (l Layout) ContainerDiskOverlay(volume string) string {
	return filepath.Join(l.EphemeralDir, "container-disks", volume+".qcow2")
}

// EmptyDisk is the sparse raw file of an emptyDisk volume.
func (l Layout) EmptyDisk(volume string) string {
	return filepath.Join(l.EphemeralDir, "empty-disks", volume+".img")
}

// CloudInitISO is the NoCloud ISO of a cloudInitNoCloud volume.
func (l Layout) CloudInitISO(volume string) string {
	return filepath.Join(l.EphemeralDir, "cloud-init", volume+".iso")
}

// PVCFile is the image file of a filesystem persistentVolumeClaim volume.
func (l Layout) PVCFile(volume string) string {
	return filepath.Join(l.PVCDir, volume, "disk.img")
}

// PVCBlock is the block device of a block persistentVolumeClaim volume.
func (l Layout) PVCBlock(volume string) string {
	return filepath.Join(l.BlockDir, volume)
}

// UnderRoot resolves p, a path inside an image, below root; ".." cannot leave root.
func UnderRoot(root, p string) string {
	return filepath.Join(root, filepath.Clean("/"+p))
}
