// Package layout is the launcher pod's contract: what virt-controller builds (pkg/launcherpod),
// virt-api validates and admits, virt-handler reaches and virt-launcher looks for must agree on
// the pod's container and volume names, the paths its volumes are mounted at, and the user the
// launcher runs as. API validation (pkg/apis/kubevirt/validation) refuses volume names whose
// derived names would be invalid or clash, and the pod builder derives them, both from here, so
// the two cannot drift apart. It depends on nothing but the standard library, so every floor
// above it, the API packages included, may import it.
package layout

import "strings"

// LauncherUID is the user (and group) virt-launcher, libvirtd and QEMU run as in a launcher
// pod: KubeVirt's qemu user. Launcher pods set it as runAsUser; virt-handler makes the guest's
// taps for it.
const LauncherUID = 107

// ContainerDiskContainerPrefix starts the name of a containerDisk's init container:
// ContainerDiskContainerPrefix + the volume's name.
const ContainerDiskContainerPrefix = "container-disk-"

// MaxContainerDiskVolumeName is the longest containerDisk volume name whose init container
// name is still a DNS label (63 characters), as a container name must be.
const MaxContainerDiskVolumeName = 63 - len(ContainerDiskContainerPrefix)

// ContainerDiskContainer is the init container that copies a containerDisk volume's image.
// Volume names are unique and each is at most MaxContainerDiskVolumeName long, so these
// names are unique too; they cannot clash with the launcher's own containers, which do not
// start with the prefix.
func ContainerDiskContainer(volume string) string {
	return ContainerDiskContainerPrefix + volume
}

// Paths in the compute container, where the pod builder mounts the pod's volumes and
// virt-launcher finds them (its flags' defaults).
const (
	// SocketMountPath is where the launcher finds its socket directory.
	SocketMountPath = "/var/run/hangar/sockets"
	// PrivateMountPath is where the launcher keeps its private files.
	PrivateMountPath = "/var/run/hangar/private"
	// StateDir and RunDir are below PrivateMountPath: libvirt's session directories, and the
	// guest's run-time files (virt-launcher's --state-dir and --run-dir).
	StateDir = PrivateMountPath + "/libvirt"
	RunDir   = PrivateMountPath + "/run"
	// EphemeralMountPath is virt-launcher's --ephemeral-dir.
	EphemeralMountPath = "/var/run/hangar/ephemeral-disks"
	// KernelBootMountPath holds the kernelBoot image's files at their paths in the image:
	// the kernel at <KernelBootMountPath>/<kernelPath>.
	KernelBootMountPath = "/var/run/hangar/kernel-boot"
	// ContainerDiskMountPath holds, per containerDisk volume, <path>/<volume>/ with the image's
	// files at their paths in the image: <volume>/disk/<file>, or <volume>/<containerDisk.path>.
	ContainerDiskMountPath = "/var/run/hangar/container-disks"
	// PVCMountDir holds one directory per filesystem persistentVolumeClaim volume, with the
	// guest's image at <PVCMountDir>/<volume>/disk.img, as in KubeVirt.
	PVCMountDir = "/var/run/kubevirt-private/vmi-disks"
	// SecretsDir holds each named Secret at <SecretsDir>/<secret name>/<key> in the compute
	// container (pkg/launcher/cloudinit reads userdata or userData, networkdata or networkData).
	SecretsDir = "/var/run/hangar/secrets"
)

// The compute container's environment: who the launcher is, where its sockets go, and whether
// the guest runs under TCG (virt-launcher's flags default to these).
const (
	EnvNamespace = "HANGAR_VMI_NAMESPACE"
	EnvName      = "HANGAR_VMI_NAME"
	EnvUID       = "HANGAR_VMI_UID"
	EnvSocketDir = "HANGAR_SOCKET_DIR"
	EnvEmulation = "HANGAR_USE_EMULATION"
)

// DomainAnnotation carries the instance's name on its launcher pods, as KubeVirt's; tools
// select launcher pods by it and by the labels v1.AppLabel (v1.LauncherAppLabelValue) and
// v1.CreatedByLabel.
const DomainAnnotation = "kubevirt.io/domain"

// Device-plugin resources virt-handler offers and launcher pods request: /dev/kvm and
// /dev/net/tun reach an unprivileged pod only this way (the devices cgroup).
const (
	KVMResource = "devices.kubevirt.io/kvm"
	TunResource = "devices.kubevirt.io/tun"
)

// Containers of the launcher's own, beside one per containerDisk.
const (
	// ComputeContainer runs virt-launcher and the guest.
	ComputeContainer = "compute"
	// CopyHelperContainer installs the copy helper the other init containers run.
	CopyHelperContainer = "install-copy-helper"
	// KernelBootContainer copies the kernelBoot image's files.
	KernelBootContainer = "kernel-boot"
	// GuestConsoleLogContainer follows the guest's serial console log to its standard
	// output, so `kubectl logs POD -c guest-console-log` shows it, as KubeVirt's: a sidecar
	// (a restartable init container) that the kubelet stops after the compute container.
	GuestConsoleLogContainer = "guest-console-log"
)

// ConsoleLogName is the guest's serial console log in the launcher's run directory (RunDir),
// which the launcher writes and rotates (to ConsoleLogName + ".1") and the guest-console-log
// container follows.
const ConsoleLogName = "console.log"

// Pod volumes of the launcher's own. A persistentVolumeClaim volume becomes a pod volume of
// the instance volume's name (as in KubeVirt), so such a volume may not take one of these.
const (
	// SocketVolume holds the sockets virt-handler reaches the launcher through; the handler
	// finds it below the kubelet's pods directory by this name.
	SocketVolume = "hangar-sockets"
	// PrivateVolume holds libvirt's and QEMU's state, the console log, cloud-init ISOs.
	PrivateVolume = "hangar-private"
	// EphemeralVolume holds the guest's ephemeral disks.
	EphemeralVolume     = "hangar-ephemeral-disks"
	CopyHelperVolume    = "hangar-copy-helper"
	KernelBootVolume    = "hangar-kernel-boot"
	ContainerDiskVolume = "hangar-container-disks"
	// VMStateVolume is the VM's state claim (persistent EFI variables and TPM state).
	VMStateVolume = "hangar-vm-state"
	// TmpVolume is /tmp of a guest with a TPM: swtpm_setup, which libvirt runs with an
	// environment of its own, writes its pid file and temporary files there.
	TmpVolume = "hangar-tmp"
	// FDSetVolume is an empty directory at FDSetDir (pkg/launcher/hotplug.go).
	FDSetVolume = "hangar-fdsets"
	// SecretVolumePrefix starts the pod volume of each cloud-init Secret: hangar-secret-<n>.
	SecretVolumePrefix = "hangar-secret-"
)

// FDSetDir is where QEMU's fd sets are named: QEMU takes /dev/fdset/<id> as the name of the
// descriptors added to fd set <id>, opening nothing; libvirt checks that a disk's source
// exists before QEMU gets it. So the compute container has an empty, writable directory
// there, and the launcher puts an empty placeholder in it for each fd set a hotplugged disk
// uses.
const FDSetDir = "/dev/fdset"

// StateClaimPrefix starts the name of a VM's state claim (persistent EFI variables and TPM
// state): persistent-state-for-<VM>, KubeVirt's.
const StateClaimPrefix = "persistent-state-for-"

// IsReservedPodVolume reports whether name is one of the launcher's own pod volumes, or may
// become one.
func IsReservedPodVolume(name string) bool {
	switch name {
	case SocketVolume, PrivateVolume, EphemeralVolume, CopyHelperVolume, KernelBootVolume, ContainerDiskVolume, VMStateVolume, TmpVolume, FDSetVolume:
		return true
	}
	return strings.HasPrefix(name, SecretVolumePrefix)
}

// BlockDeviceDir holds the device of each block persistentVolumeClaim volume as
// BlockDeviceDir/<volume>, KubeVirt's devicePath.
const BlockDeviceDir = "/dev"

// containerDevEntries are what the runtime and the kubelet put in a container's /dev
// themselves (the device plugins' kvm and net/tun among them), and the launcher pod's
// FDSetDir: a block volume's devicePath must not shadow them.
var containerDevEntries = map[string]bool{
	"console": true, "core": true, "fd": true, "fdset": true, "full": true, "kvm": true, "mqueue": true, "net": true,
	"null": true, "ptmx": true, "pts": true, "random": true, "shm": true, "stderr": true, "stdin": true,
	"stdout": true, "termination-log": true, "tty": true, "urandom": true, "zero": true,
}

// ShadowsContainerDevice reports whether BlockDeviceDir/<volume> would hide an entry the
// container's /dev needs. Whether a claim is a block device is known only when the pod is
// built, so validation refuses these names for every persistentVolumeClaim volume.
func ShadowsContainerDevice(volume string) bool {
	return containerDevEntries[volume]
}

// Hostname is the launcher pod's (and the guest's DHCP) hostname for an instance: its
// spec.hostname, else its name up to the first dot (as KubeVirt does, so "web.1" runs as
// "web"), cut to a DNS label's 63 characters without a trailing dash.
func Hostname(name, specHostname string) string {
	if specHostname != "" {
		return specHostname
	}
	hostname, _, _ := strings.Cut(name, ".")
	if len(hostname) > 63 {
		hostname = hostname[:63]
	}
	return strings.TrimRight(hostname, "-")
}
