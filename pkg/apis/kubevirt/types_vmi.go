package kubevirt

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstance is a running virtual machine: one guest in one launcher pod.
type VirtualMachineInstance struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec is the specification of the guest. It cannot change after creation.
	Spec VirtualMachineInstanceSpec
	// Status is the observed state of the guest, written by the controller and the node agent.
	Status VirtualMachineInstanceStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceList is a list of VirtualMachineInstances.
type VirtualMachineInstanceList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachineInstances.
	Items []VirtualMachineInstance
}

// VirtualMachineInstanceTemplateSpec describes the VirtualMachineInstances a VirtualMachine or
// a VirtualMachineInstanceReplicaSet creates.
type VirtualMachineInstanceTemplateSpec struct {
	// Metadata the created instances get (labels, annotations).
	ObjectMeta metav1.ObjectMeta
	// Spec of the created instances.
	Spec VirtualMachineInstanceSpec
}

// EvictionStrategy says what happens to an instance when its node is drained.
type EvictionStrategy string

const (
	// EvictionStrategyNone lets the instance be evicted (stopped).
	EvictionStrategyNone EvictionStrategy = "None"
	// EvictionStrategyLiveMigrate blocks eviction until the instance is migrated.
	EvictionStrategyLiveMigrate EvictionStrategy = "LiveMigrate"
	// EvictionStrategyLiveMigrateIfPossible migrates when possible, else evicts.
	EvictionStrategyLiveMigrateIfPossible EvictionStrategy = "LiveMigrateIfPossible"
	// EvictionStrategyExternal blocks eviction and leaves it to an external controller.
	EvictionStrategyExternal EvictionStrategy = "External"
)

// StartStrategy says how a guest starts.
type StartStrategy string

const (
	// StartStrategyPaused starts the guest paused.
	StartStrategyPaused StartStrategy = "Paused"
)

// VirtualMachineInstanceSpec is the specification of a guest and where it may run.
type VirtualMachineInstanceSpec struct {
	// Domain is the virtual hardware of the guest: CPU, memory, firmware and devices.
	Domain DomainSpec
	// NodeSelector must match a node's labels for the guest to be scheduled there.
	NodeSelector map[string]string
	// Affinity is the scheduling constraints of the guest's launcher pod.
	Affinity *corev1.Affinity
	// SchedulerName is the scheduler of the launcher pod; the default scheduler when empty.
	SchedulerName string
	// Tolerations of the launcher pod.
	Tolerations []corev1.Toleration
	// PriorityClassName of the launcher pod.
	PriorityClassName string
	// EvictionStrategy says what happens when the node is drained: None, LiveMigrate,
	// LiveMigrateIfPossible or External.
	EvictionStrategy *EvictionStrategy
	// StartStrategy Paused starts the guest paused: it runs once unpaused.
	StartStrategy *StartStrategy
	// TerminationGracePeriodSeconds is how long the guest gets to shut down after an ACPI
	// power-off before it is destroyed. Defaults to 30.
	TerminationGracePeriodSeconds *int64
	// Volumes that the guest's disks can use.
	Volumes []Volume
	// Hostname of the guest; the instance name when empty.
	Hostname string
	// Subdomain makes the guest's fully qualified name <hostname>.<subdomain>.<namespace>.svc.
	Subdomain string
	// Networks the guest's interfaces attach to.
	Networks []Network
}

// DomainSpec is the virtual hardware of a guest.
type DomainSpec struct {
	// Resources are the compute resources the guest's launcher pod requests.
	Resources ResourceRequirements
	// CPU topology and model of the guest.
	CPU *CPU
	// Memory of the guest.
	Memory *Memory
	// Machine type of the guest.
	Machine *Machine
	// Firmware of the guest: UUID, serial number, BIOS or EFI, direct kernel boot.
	Firmware *Firmware
	// Clock is the guest's real-time clock offset and timers.
	Clock *Clock
	// Features of the guest: ACPI, APIC, SMM, Hyper-V enlightenments.
	Features *Features
	// Devices of the guest: disks, interfaces, console, graphics, RNG.
	Devices Devices
}

// ResourceRequirements are the compute resources of a guest.
type ResourceRequirements struct {
	// Requests is the minimum amount of resources; requests.memory is the guest's memory when
	// memory.guest is not set.
	Requests corev1.ResourceList
	// Limits is the maximum amount of resources.
	Limits corev1.ResourceList
	// OvercommitGuestOverhead leaves the virtualization overhead out of the pod's memory request.
	OvercommitGuestOverhead bool
}

// CPU is the CPU topology and model of a guest.
type CPU struct {
	// Cores per socket. Defaults to 1.
	Cores uint32
	// Sockets of the guest. Defaults to 1.
	Sockets uint32
	// Threads per core. Defaults to 1.
	Threads uint32
	// Model is the CPU model: host-model, host-passthrough or a named libvirt model.
	Model string
	// Features are CPU features to add to or remove from the model.
	Features []CPUFeature
}

// Memory is the memory of a guest.
type Memory struct {
	// Guest is the amount of memory the guest sees. Defaults to resources.requests.memory.
	Guest *resource.Quantity
}

// Machine is the emulated machine type of a guest.
type Machine struct {
	// Type is the QEMU machine type, such as q35. Defaults to q35.
	Type string
}

// Firmware is the firmware of a guest.
type Firmware struct {
	// UUID is the guest's SMBIOS UUID, as reported by dmidecode.
	UUID types.UID
	// Serial is the guest's SMBIOS serial number.
	Serial string
	// Bootloader is the firmware the guest boots with: BIOS (the default) or EFI.
	Bootloader *Bootloader
	// KernelBoot boots the guest directly from a kernel (and initrd) carried in an image.
	KernelBoot *KernelBoot
}

// KernelBoot boots a guest directly from a kernel and an optional initrd.
type KernelBoot struct {
	// KernelArgs is the kernel command line; it needs a kernel from container.kernelPath.
	KernelArgs string
	// Container is the image that carries the kernel and initrd.
	Container *KernelBootContainer
}

// KernelBootContainer is an image carrying a kernel and an initrd.
type KernelBootContainer struct {
	// Image is the container image holding the kernel and initrd.
	Image string
	// ImagePullSecret is the name of the secret used to pull the image.
	ImagePullSecret string
	// KernelPath is the kernel's path inside the image.
	KernelPath string
	// InitrdPath is the initrd's path inside the image.
	InitrdPath string
	// ImagePullPolicy is Always, Never or IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
}

// Features are hypervisor features exposed to a guest.
type Features struct {
	// ACPI lets the guest power off cleanly on request. Enabled by default.
	ACPI FeatureState
	// APIC is the guest's local APIC; the machine type's default when unset.
	APIC *FeatureAPIC
	// Hyperv are Hyper-V enlightenments for Windows guests (KVM only).
	Hyperv *FeatureHyperv
	// SMM is System Management Mode; EFI Secure Boot needs it.
	SMM *FeatureState
	// KVM says how the guest sees KVM (KVM only).
	KVM *FeatureKVM
	// Pvspinlock tells the guest the host supports paravirtual spinlocks (KVM only).
	Pvspinlock *FeatureState
}

// FeatureState turns a feature on or off.
type FeatureState struct {
	// Enabled turns the feature on; true when the feature is given without it.
	Enabled *bool
}

// Devices are the virtual devices of a guest.
type Devices struct {
	// Disks of the guest, each backed by the volume of the same name.
	Disks []Disk
	// Interfaces of the guest, each attached to the network of the same name.
	Interfaces []Interface
	// AutoattachPodInterface adds a pod network and interface when none is given. Defaults to true.
	AutoattachPodInterface *bool
	// AutoattachGraphicsDevice adds a VNC display. Defaults to true.
	AutoattachGraphicsDevice *bool
	// AutoattachSerialConsole adds a serial console. Defaults to true.
	AutoattachSerialConsole *bool
	// Rng adds a virtio random number generator fed from the host.
	Rng *Rng
	// UseVirtioTransitional gives virtio devices the transitional (virtio 0.9) model, for old
	// guests such as CentOS 6.
	UseVirtioTransitional *bool
	// Inputs are input devices, such as a USB tablet.
	Inputs []Input
	// AutoattachInputDevice adds a USB tablet, named default-0, when no input device is given.
	// Defaults to false.
	AutoattachInputDevice *bool
	// BlockMultiQueue gives virtio disks one queue per vCPU.
	BlockMultiQueue *bool
	// NetworkInterfaceMultiqueue gives virtio interfaces one queue per vCPU.
	NetworkInterfaceMultiqueue *bool
	// TPM adds an emulated TPM 2.0.
	TPM *TPMDevice
}

// Rng is a virtio random number generator.
type Rng struct{}

// DiskBus is the bus a disk is attached to.
type DiskBus string

const (
	// DiskBusVirtio is the paravirtual virtio bus, the default for disks.
	DiskBusVirtio DiskBus = "virtio"
	// DiskBusSATA is the SATA bus, the default for CD-ROMs.
	DiskBusSATA DiskBus = "sata"
	// DiskBusSCSI is the SCSI bus.
	DiskBusSCSI DiskBus = "scsi"
	// DiskBusUSB is the USB bus.
	DiskBusUSB DiskBus = "usb"
)

// Disk is a disk of a guest, backed by the volume of the same name.
type Disk struct {
	// Name of the disk; a volume of the same name backs it.
	Name string
	// DiskDevice is the kind of device: disk or cdrom.
	DiskDevice
	// BootOrder is the disk's place in the boot order (1 first). Disks without one are not booted.
	BootOrder *uint
	// Serial is the disk's serial number.
	Serial string
}

// DiskDevice is the kind of a disk device; exactly one member is set.
type DiskDevice struct {
	// Disk attaches the volume as a disk.
	Disk *DiskTarget
	// CDRom attaches the volume as a CD-ROM.
	CDRom *CDRomTarget
}

// DiskTarget is a disk device.
type DiskTarget struct {
	// Bus is virtio, sata, scsi or usb. Defaults to virtio.
	Bus DiskBus
	// ReadOnly attaches the disk read-only.
	ReadOnly bool
}

// CDRomTarget is a CD-ROM device.
type CDRomTarget struct {
	// Bus is sata, scsi or usb. Defaults to sata.
	Bus DiskBus
	// ReadOnly is always true for a CD-ROM.
	ReadOnly *bool
}

// Interface is a network interface of a guest, attached to the network of the same name.
type Interface struct {
	// Name of the interface; a network of the same name backs it.
	Name string
	// Model is the emulated NIC model. Defaults to virtio.
	Model string
	// InterfaceBindingMethod is how the interface is bound to the pod network.
	InterfaceBindingMethod
	// Ports are forwarded to the guest by the masquerade binding; all ports when empty.
	Ports []Port
	// MacAddress of the interface, such as de:ad:00:00:be:af.
	MacAddress string
	// BootOrder is the interface's place in the boot order (PXE).
	BootOrder *uint
}

// InterfaceBindingMethod is how an interface is bound to its network; exactly one is set.
type InterfaceBindingMethod struct {
	// Bridge connects the guest directly to the pod's network interface.
	Bridge *InterfaceBridge
	// Masquerade gives the guest a private address behind NAT through the pod's address.
	Masquerade *InterfaceMasquerade
}

// InterfaceBridge is the bridge binding.
type InterfaceBridge struct{}

// InterfaceMasquerade is the masquerade (NAT) binding.
type InterfaceMasquerade struct{}

// Port is a port forwarded to the guest.
type Port struct {
	// Name of the port.
	Name string
	// Protocol is TCP or UDP. Defaults to TCP.
	Protocol string
	// Port number.
	Port int32
}

// Volume is a source of data for a guest's disk.
type Volume struct {
	// Name of the volume; the disk of the same name uses it.
	Name string
	// VolumeSource is where the data comes from; exactly one member is set.
	VolumeSource
}

// VolumeSource is where a volume's data comes from; exactly one member is set.
type VolumeSource struct {
	// PersistentVolumeClaim attaches a claimed persistent volume (file or block).
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource
	// CloudInitNoCloud attaches a NoCloud cloud-init data source as a disk labelled cidata.
	CloudInitNoCloud *CloudInitNoCloudSource
	// ContainerDisk attaches a disk image carried in a container image; writes go to an
	// ephemeral overlay and are lost when the instance stops.
	ContainerDisk *ContainerDiskSource
	// EmptyDisk attaches a blank ephemeral disk of the given capacity.
	EmptyDisk *EmptyDiskSource
	// DataVolume attaches the claim of a DataVolume (cdi.kubevirt.io), which has its name.
	DataVolume *DataVolumeSource
	// MemoryDump is the claim a memory dump of the guest goes to; only the VM's memorydump
	// action adds one (docs/hotplug.md).
	MemoryDump *MemoryDumpVolumeSource
}

// MemoryDumpVolumeSource is the claim of a memory dump, always hotpluggable.
type MemoryDumpVolumeSource struct {
	PersistentVolumeClaimVolumeSource
}

// DataVolumeSource names a DataVolume in the instance's namespace.
type DataVolumeSource struct {
	// Name of the DataVolume, and so of its claim.
	Name string
	// Hotpluggable marks the volume as attachable to a running guest.
	Hotpluggable bool
}

// PersistentVolumeClaimVolumeSource refers to a PersistentVolumeClaim in the instance's namespace.
type PersistentVolumeClaimVolumeSource struct {
	corev1.PersistentVolumeClaimVolumeSource
	// Hotpluggable marks the volume as attachable to a running guest.
	Hotpluggable bool
}

// CloudInitNoCloudSource is NoCloud cloud-init user and network data.
type CloudInitNoCloudSource struct {
	// UserDataSecretRef names a secret holding the user data under the key userdata.
	UserDataSecretRef *corev1.LocalObjectReference
	// UserDataBase64 is the user data, base64-encoded.
	UserDataBase64 string
	// UserData is the user data, inline.
	UserData string
	// NetworkDataSecretRef names a secret holding the network data under the key networkdata.
	NetworkDataSecretRef *corev1.LocalObjectReference
	// NetworkDataBase64 is the network data, base64-encoded.
	NetworkDataBase64 string
	// NetworkData is the network data, inline.
	NetworkData string
}

// ContainerDiskSource is a disk image carried in a container image at /disk/*.img or
// /disk/*.qcow2.
type ContainerDiskSource struct {
	// Image is the container image holding the disk image.
	Image string
	// ImagePullSecret is the name of the secret used to pull the image.
	ImagePullSecret string
	// Path is the disk image's path inside the container image; the one file under /disk when empty.
	Path string
	// ImagePullPolicy is Always, Never or IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
}

// EmptyDiskSource is a blank, ephemeral disk.
type EmptyDiskSource struct {
	// Capacity of the disk.
	Capacity resource.Quantity
}

// Network is a network an interface of a guest attaches to; exactly one source is set.
type Network struct {
	// Name of the network; the interface of the same name uses it.
	Name string
	// NetworkSource is the kind of network.
	NetworkSource
}

// NetworkSource is the kind of a network; exactly one member is set.
type NetworkSource struct {
	// Pod is the default Kubernetes pod network.
	Pod *PodNetwork
}

// PodNetwork is the pod network, as seen from the guest.
type PodNetwork struct {
	// VMNetworkCIDR is the guest's private IPv4 network for the masquerade binding.
	// Defaults to 10.0.2.0/24.
	VMNetworkCIDR string
}

// VirtualMachineInstancePhase is where an instance is in its lifecycle.
type VirtualMachineInstancePhase string

const (
	// VmPhaseUnset is the phase of a newly created instance.
	VmPhaseUnset VirtualMachineInstancePhase = ""
	// Pending means the instance was accepted and has no launcher pod yet.
	Pending VirtualMachineInstancePhase = "Pending"
	// Scheduling means the launcher pod exists and waits to be scheduled.
	Scheduling VirtualMachineInstancePhase = "Scheduling"
	// Scheduled means the launcher pod is bound to a node; the node agent takes over.
	Scheduled VirtualMachineInstancePhase = "Scheduled"
	// Running means the guest is running.
	Running VirtualMachineInstancePhase = "Running"
	// Succeeded means the guest shut down cleanly.
	Succeeded VirtualMachineInstancePhase = "Succeeded"
	// Failed means the guest crashed or could not be started.
	Failed VirtualMachineInstancePhase = "Failed"
	// Unknown means the state cannot be determined.
	Unknown VirtualMachineInstancePhase = "Unknown"
)

// VirtualMachineInstanceConditionType names an instance condition.
type VirtualMachineInstanceConditionType string

const (
	// VirtualMachineInstanceReady means the guest is running and ready.
	VirtualMachineInstanceReady VirtualMachineInstanceConditionType = "Ready"
	// VirtualMachineInstancePaused means the guest is paused.
	VirtualMachineInstancePaused VirtualMachineInstanceConditionType = "Paused"
	// VirtualMachineInstanceProvisioning means the instance's resources are being prepared.
	VirtualMachineInstanceProvisioning VirtualMachineInstanceConditionType = "Provisioning"
	// VirtualMachineInstanceSynchronized is false, with a reason, while the controller cannot
	// do what the instance asks (a claim it names is missing, say).
	VirtualMachineInstanceSynchronized VirtualMachineInstanceConditionType = "Synchronized"
	// VirtualMachineInstanceAgentConnected means the guest agent is connected.
	VirtualMachineInstanceAgentConnected VirtualMachineInstanceConditionType = "AgentConnected"
	// VirtualMachineInstanceFeaturesDropped is true when features the spec asks for only KVM
	// offers, and the guest runs under software emulation without them.
	VirtualMachineInstanceFeaturesDropped VirtualMachineInstanceConditionType = "FeaturesDropped"
	// VirtualMachineInstanceIsMigratable says whether the instance can be live migrated; when
	// False, its reason and message say why not.
	VirtualMachineInstanceIsMigratable VirtualMachineInstanceConditionType = "LiveMigratable"
)

// VirtualMachineInstanceStatus is the observed state of an instance.
type VirtualMachineInstanceStatus struct {
	// NodeName is the node the instance runs on.
	NodeName string
	// Reason is a brief CamelCase explanation of the phase, such as why it failed.
	Reason string
	// Conditions are the latest observations of the instance's state.
	Conditions []VirtualMachineInstanceCondition
	// Phase is where the instance is in its lifecycle.
	Phase VirtualMachineInstancePhase
	// PhaseTransitionTimestamps records when the instance entered each phase.
	PhaseTransitionTimestamps []VirtualMachineInstancePhaseTransitionTimestamp
	// Interfaces are the guest's network interfaces with their addresses.
	Interfaces []VirtualMachineInstanceNetworkInterface
	// GuestOSInfo describes the guest's operating system, where known.
	GuestOSInfo VirtualMachineInstanceGuestOSInfo
	// QOSClass is the quality-of-service class of the launcher pod.
	QOSClass *corev1.PodQOSClass
	// ActivePods maps the UIDs of the instance's launcher pods to their node names.
	ActivePods map[types.UID]string
	// FSFreezeStatus is "frozen" while a freeze of the guest's filesystems is in effect.
	FSFreezeStatus string
	// MigrationState is the state of the instance's current or last live migration.
	MigrationState *VirtualMachineInstanceMigrationState
	// MigrationMethod says whether a migration copies the instance's local disks
	// (BlockMigration) or moves memory and device state only (LiveMigration).
	MigrationMethod VirtualMachineInstanceMigrationMethod
	// EvacuationNodeName is the node the instance is to leave: set when an eviction of its
	// launcher pod is turned into a migration. Only Hangar's components set it.
	EvacuationNodeName string
	// VolumeStatus is the state of the instance's hotplugged volumes.
	VolumeStatus []VolumeStatus
}

// VolumeStatus is the state of one of the instance's volumes.
type VolumeStatus struct {
	// Name is the volume's.
	Name string
	// Target is the disk's name in the domain once attached.
	Target string
	// Phase is where the volume is on its way into the guest.
	Phase VolumePhase
	// Reason is a brief CamelCase explanation of the phase.
	Reason string
	// Message says more of the phase, for people.
	Message string
	// HotplugVolume names the attachment pod that brings a hotplugged claim to the node.
	HotplugVolume *HotplugVolumeStatus
	// MemoryDumpVolume is the state of a memory dump to the volume.
	MemoryDumpVolume *DomainMemoryDumpInfo
}

// DomainMemoryDumpInfo is a memory dump of the guest to a claim.
type DomainMemoryDumpInfo struct {
	StartTimestamp *metav1.Time
	EndTimestamp   *metav1.Time
	ClaimName      string
	TargetFileName string
}

// HotplugVolumeStatus names the attachment pod of a hotplugged volume.
type HotplugVolumeStatus struct {
	AttachPodName string
	AttachPodUID  types.UID
}

// VolumePhase is where a volume is on its way into the guest.
type VolumePhase string

// The phases of a hotplugged volume.
const (
	VolumePending               VolumePhase = "Pending"
	HotplugVolumeAttachedToNode VolumePhase = "AttachedToNode"
	VolumeReady                 VolumePhase = "Ready"
	HotplugVolumeDetaching      VolumePhase = "Detaching"
	MemoryDumpVolumeInProgress  VolumePhase = "MemoryDumpInProgress"
	MemoryDumpVolumeCompleted   VolumePhase = "MemoryDumpCompleted"
	MemoryDumpVolumeFailed      VolumePhase = "MemoryDumpFailed"
)

// VirtualMachineInstanceCondition is one observation of an instance's state.
type VirtualMachineInstanceCondition struct {
	// Type of the condition.
	Type VirtualMachineInstanceConditionType
	// Status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus
	// LastProbeTime is when the condition was last checked.
	LastProbeTime metav1.Time
	// LastTransitionTime is when the condition last changed status.
	LastTransitionTime metav1.Time
	// Reason is a one-word CamelCase reason for the condition's last transition.
	Reason string
	// Message is a human-readable explanation of the last transition.
	Message string
}

// VirtualMachineInstancePhaseTransitionTimestamp is when an instance entered a phase.
type VirtualMachineInstancePhaseTransitionTimestamp struct {
	// Phase entered.
	Phase VirtualMachineInstancePhase
	// PhaseTransitionTimestamp is when the phase was entered.
	PhaseTransitionTimestamp metav1.Time
}

// VirtualMachineInstanceNetworkInterface is a network interface of a running guest.
type VirtualMachineInstanceNetworkInterface struct {
	// IP is the interface's primary address; for the masquerade binding, the pod's address.
	IP string
	// MAC address of the interface.
	MAC string
	// Name of the interface in the instance spec.
	Name string
	// IPs are all addresses of the interface.
	IPs []string
	// InterfaceName is the interface's name inside the guest, where known.
	InterfaceName string
	// PodInterfaceName is the pod interface the guest interface is bound to.
	PodInterfaceName string
	// InfoSource says where the information came from: domain, guest-agent or both.
	InfoSource string
}

// VirtualMachineInstanceGuestOSInfo describes a guest's operating system.
type VirtualMachineInstanceGuestOSInfo struct {
	// Name of the operating system.
	Name string
	// KernelRelease of the guest.
	KernelRelease string
	// Version of the operating system.
	Version string
	// PrettyName of the operating system.
	PrettyName string
	// VersionID of the operating system.
	VersionID string
	// KernelVersion of the guest.
	KernelVersion string
	// Machine is the guest's hardware name.
	Machine string
	// ID of the operating system.
	ID string
}
