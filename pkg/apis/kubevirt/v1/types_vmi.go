package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +genclient
// +genclient:method=Pause,verb=update,subresource=pause,input=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.PauseOptions,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status
// +genclient:method=Unpause,verb=update,subresource=unpause,input=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.UnpauseOptions,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status
// +genclient:method=SoftReboot,verb=update,subresource=softreboot,input=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.SoftRebootOptions,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstance is a running virtual machine: one guest in one launcher pod.
type VirtualMachineInstance struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is the specification of the guest. It cannot change after creation.
	Spec VirtualMachineInstanceSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is the observed state of the guest, written by the controller and the node agent.
	// +optional
	Status VirtualMachineInstanceStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceList is a list of VirtualMachineInstances.
type VirtualMachineInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineInstances.
	Items []VirtualMachineInstance `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineInstanceTemplateSpec describes the VirtualMachineInstances a VirtualMachine or
// a VirtualMachineInstanceReplicaSet creates.
type VirtualMachineInstanceTemplateSpec struct {
	// Metadata the created instances get (labels, annotations).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ObjectMeta metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec of the created instances.
	// +optional
	Spec VirtualMachineInstanceSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
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
	Domain DomainSpec `json:"domain" protobuf:"bytes,1,opt,name=domain"`
	// NodeSelector must match a node's labels for the guest to be scheduled there.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty" protobuf:"bytes,2,rep,name=nodeSelector"`
	// Affinity is the scheduling constraints of the guest's launcher pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty" protobuf:"bytes,3,opt,name=affinity"`
	// SchedulerName is the scheduler of the launcher pod; the default scheduler when empty.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty" protobuf:"bytes,4,opt,name=schedulerName"`
	// Tolerations of the launcher pod.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty" protobuf:"bytes,5,rep,name=tolerations"`
	// PriorityClassName of the launcher pod.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty" protobuf:"bytes,6,opt,name=priorityClassName"`
	// EvictionStrategy says what happens when the node is drained: None, LiveMigrate,
	// LiveMigrateIfPossible or External.
	// +optional
	EvictionStrategy *EvictionStrategy `json:"evictionStrategy,omitempty" protobuf:"bytes,7,opt,name=evictionStrategy,casttype=EvictionStrategy"`
	// StartStrategy Paused starts the guest paused: it runs once unpaused.
	// +optional
	StartStrategy *StartStrategy `json:"startStrategy,omitempty" protobuf:"bytes,8,opt,name=startStrategy,casttype=StartStrategy"`
	// TerminationGracePeriodSeconds is how long the guest gets to shut down after an ACPI
	// power-off before it is destroyed. Defaults to 30.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty" protobuf:"varint,9,opt,name=terminationGracePeriodSeconds"`
	// Volumes that the guest's disks can use.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +patchMergeKey=name
	// +patchStrategy=merge
	Volumes []Volume `json:"volumes,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,10,rep,name=volumes"`
	// Hostname of the guest; the instance name when empty.
	// +optional
	Hostname string `json:"hostname,omitempty" protobuf:"bytes,11,opt,name=hostname"`
	// Subdomain makes the guest's fully qualified name <hostname>.<subdomain>.<namespace>.svc.
	// +optional
	Subdomain string `json:"subdomain,omitempty" protobuf:"bytes,12,opt,name=subdomain"`
	// Networks the guest's interfaces attach to.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +patchMergeKey=name
	// +patchStrategy=merge
	Networks []Network `json:"networks,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,13,rep,name=networks"`
}

// DomainSpec is the virtual hardware of a guest.
type DomainSpec struct {
	// Resources are the compute resources the guest's launcher pod requests.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty" protobuf:"bytes,1,opt,name=resources"`
	// CPU topology and model of the guest.
	// +optional
	CPU *CPU `json:"cpu,omitempty" protobuf:"bytes,2,opt,name=cpu"`
	// Memory of the guest.
	// +optional
	Memory *Memory `json:"memory,omitempty" protobuf:"bytes,3,opt,name=memory"`
	// Machine type of the guest.
	// +optional
	Machine *Machine `json:"machine,omitempty" protobuf:"bytes,4,opt,name=machine"`
	// Firmware of the guest: UUID, serial number, BIOS or EFI, direct kernel boot.
	// +optional
	Firmware *Firmware `json:"firmware,omitempty" protobuf:"bytes,5,opt,name=firmware"`
	// Clock is the guest's real-time clock offset and timers.
	// +optional
	Clock *Clock `json:"clock,omitempty" protobuf:"bytes,8,opt,name=clock"`
	// Features of the guest: ACPI, APIC, SMM, Hyper-V enlightenments.
	// +optional
	Features *Features `json:"features,omitempty" protobuf:"bytes,6,opt,name=features"`
	// Devices of the guest: disks, interfaces, console, graphics, RNG.
	Devices Devices `json:"devices" protobuf:"bytes,7,opt,name=devices"`
}

// ResourceRequirements are the compute resources of a guest.
type ResourceRequirements struct {
	// Requests is the minimum amount of resources; requests.memory is the guest's memory when
	// memory.guest is not set.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty" protobuf:"bytes,1,rep,name=requests,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
	// Limits is the maximum amount of resources.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty" protobuf:"bytes,2,rep,name=limits,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
	// OvercommitGuestOverhead leaves the virtualization overhead out of the pod's memory request.
	// +optional
	OvercommitGuestOverhead bool `json:"overcommitGuestOverhead,omitempty" protobuf:"varint,3,opt,name=overcommitGuestOverhead"`
}

// CPU is the CPU topology and model of a guest.
type CPU struct {
	// Cores per socket. Defaults to 1.
	// +optional
	Cores uint32 `json:"cores,omitempty" protobuf:"varint,1,opt,name=cores"`
	// Sockets of the guest. Defaults to 1.
	// +optional
	Sockets uint32 `json:"sockets,omitempty" protobuf:"varint,2,opt,name=sockets"`
	// Threads per core. Defaults to 1.
	// +optional
	Threads uint32 `json:"threads,omitempty" protobuf:"varint,3,opt,name=threads"`
	// Model is the CPU model: host-model, host-passthrough or a named libvirt model.
	// +optional
	Model string `json:"model,omitempty" protobuf:"bytes,4,opt,name=model"`
	// Features are CPU features to add to or remove from the model.
	// +optional
	// +listType=atomic
	Features []CPUFeature `json:"features,omitempty" protobuf:"bytes,5,rep,name=features"`
}

// Memory is the memory of a guest.
type Memory struct {
	// Guest is the amount of memory the guest sees. Defaults to resources.requests.memory.
	// +optional
	Guest *resource.Quantity `json:"guest,omitempty" protobuf:"bytes,1,opt,name=guest"`
}

// Machine is the emulated machine type of a guest.
type Machine struct {
	// Type is the QEMU machine type, such as q35. Defaults to q35.
	// +optional
	Type string `json:"type" protobuf:"bytes,1,opt,name=type"`
}

// Firmware is the firmware of a guest.
type Firmware struct {
	// UUID is the guest's SMBIOS UUID, as reported by dmidecode.
	// +optional
	UUID types.UID `json:"uuid,omitempty" protobuf:"bytes,1,opt,name=uuid,casttype=k8s.io/apimachinery/pkg/types.UID"`
	// Serial is the guest's SMBIOS serial number.
	// +optional
	Serial string `json:"serial,omitempty" protobuf:"bytes,2,opt,name=serial"`
	// Bootloader is the firmware the guest boots with: BIOS (the default) or EFI.
	// +optional
	Bootloader *Bootloader `json:"bootloader,omitempty" protobuf:"bytes,4,opt,name=bootloader"`
	// KernelBoot boots the guest directly from a kernel (and initrd) carried in an image.
	// +optional
	KernelBoot *KernelBoot `json:"kernelBoot,omitempty" protobuf:"bytes,3,opt,name=kernelBoot"`
}

// KernelBoot boots a guest directly from a kernel and an optional initrd.
type KernelBoot struct {
	// KernelArgs is the kernel command line; it needs a kernel from container.kernelPath.
	// +optional
	KernelArgs string `json:"kernelArgs,omitempty" protobuf:"bytes,1,opt,name=kernelArgs"`
	// Container is the image that carries the kernel and initrd.
	// +optional
	Container *KernelBootContainer `json:"container,omitempty" protobuf:"bytes,2,opt,name=container"`
}

// KernelBootContainer is an image carrying a kernel and an initrd.
type KernelBootContainer struct {
	// Image is the container image holding the kernel and initrd.
	Image string `json:"image" protobuf:"bytes,1,opt,name=image"`
	// ImagePullSecret is the name of the secret used to pull the image.
	// +optional
	ImagePullSecret string `json:"imagePullSecret,omitempty" protobuf:"bytes,2,opt,name=imagePullSecret"`
	// KernelPath is the kernel's path inside the image.
	// +optional
	KernelPath string `json:"kernelPath,omitempty" protobuf:"bytes,3,opt,name=kernelPath"`
	// InitrdPath is the initrd's path inside the image.
	// +optional
	InitrdPath string `json:"initrdPath,omitempty" protobuf:"bytes,4,opt,name=initrdPath"`
	// ImagePullPolicy is Always, Never or IfNotPresent.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty" protobuf:"bytes,5,opt,name=imagePullPolicy,casttype=k8s.io/api/core/v1.PullPolicy"`
}

// Features are hypervisor features exposed to a guest.
type Features struct {
	// ACPI lets the guest power off cleanly on request. Enabled by default.
	// +optional
	ACPI FeatureState `json:"acpi,omitempty" protobuf:"bytes,1,opt,name=acpi"`
	// APIC is the guest's local APIC; the machine type's default when unset.
	// +optional
	APIC *FeatureAPIC `json:"apic,omitempty" protobuf:"bytes,2,opt,name=apic"`
	// Hyperv are Hyper-V enlightenments for Windows guests. KVM only: dropped under software
	// emulation.
	// +optional
	Hyperv *FeatureHyperv `json:"hyperv,omitempty" protobuf:"bytes,3,opt,name=hyperv"`
	// SMM is System Management Mode; EFI Secure Boot needs it.
	// +optional
	SMM *FeatureState `json:"smm,omitempty" protobuf:"bytes,4,opt,name=smm"`
	// KVM says how the guest sees KVM. KVM only: dropped under software emulation.
	// +optional
	KVM *FeatureKVM `json:"kvm,omitempty" protobuf:"bytes,5,opt,name=kvm"`
	// Pvspinlock tells the guest the host supports paravirtual spinlocks. KVM only: dropped
	// under software emulation.
	// +optional
	Pvspinlock *FeatureState `json:"pvspinlock,omitempty" protobuf:"bytes,6,opt,name=pvspinlock"`
}

// FeatureState turns a feature on or off.
type FeatureState struct {
	// Enabled turns the feature on; true when the feature is given without it.
	// +optional
	Enabled *bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`
}

// Devices are the virtual devices of a guest.
type Devices struct {
	// Disks of the guest, each backed by the volume of the same name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +patchMergeKey=name
	// +patchStrategy=merge
	Disks []Disk `json:"disks,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,1,rep,name=disks"`
	// Interfaces of the guest, each attached to the network of the same name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +patchMergeKey=name
	// +patchStrategy=merge
	Interfaces []Interface `json:"interfaces,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,2,rep,name=interfaces"`
	// AutoattachPodInterface adds a pod network and interface when none is given. Defaults to true.
	// +optional
	AutoattachPodInterface *bool `json:"autoattachPodInterface,omitempty" protobuf:"varint,3,opt,name=autoattachPodInterface"`
	// AutoattachGraphicsDevice adds a VNC display. Defaults to true.
	// +optional
	AutoattachGraphicsDevice *bool `json:"autoattachGraphicsDevice,omitempty" protobuf:"varint,4,opt,name=autoattachGraphicsDevice"`
	// AutoattachSerialConsole adds a serial console. Defaults to true.
	// +optional
	AutoattachSerialConsole *bool `json:"autoattachSerialConsole,omitempty" protobuf:"varint,5,opt,name=autoattachSerialConsole"`
	// Rng adds a virtio random number generator fed from the host.
	// +optional
	Rng *Rng `json:"rng,omitempty" protobuf:"bytes,6,opt,name=rng"`
	// UseVirtioTransitional gives virtio devices the transitional (virtio 0.9) model, for old
	// guests such as CentOS 6.
	// +optional
	UseVirtioTransitional *bool `json:"useVirtioTransitional,omitempty" protobuf:"varint,7,opt,name=useVirtioTransitional"`
	// Inputs are input devices, such as a USB tablet.
	// +optional
	// +listType=atomic
	Inputs []Input `json:"inputs,omitempty" protobuf:"bytes,8,rep,name=inputs"`
	// AutoattachInputDevice adds a USB tablet, named default-0, when no input device is given.
	// Defaults to false.
	// +optional
	AutoattachInputDevice *bool `json:"autoattachInputDevice,omitempty" protobuf:"varint,9,opt,name=autoattachInputDevice"`
	// BlockMultiQueue gives virtio disks one queue per vCPU.
	// +optional
	BlockMultiQueue *bool `json:"blockMultiQueue,omitempty" protobuf:"varint,10,opt,name=blockMultiQueue"`
	// NetworkInterfaceMultiqueue gives virtio interfaces one queue per vCPU.
	// +optional
	NetworkInterfaceMultiqueue *bool `json:"networkInterfaceMultiqueue,omitempty" protobuf:"varint,11,opt,name=networkInterfaceMultiqueue"`
	// TPM adds an emulated TPM 2.0 (swtpm).
	// +optional
	TPM *TPMDevice `json:"tpm,omitempty" protobuf:"bytes,12,opt,name=tpm"`
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
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// DiskDevice is the kind of device: disk or cdrom.
	DiskDevice `json:",inline" protobuf:"bytes,2,opt,name=diskDevice"`
	// BootOrder is the disk's place in the boot order (1 first). Disks without one are not booted.
	// +optional
	BootOrder *uint `json:"bootOrder,omitempty" protobuf:"varint,3,opt,name=bootOrder,casttype=uint"`
	// Serial is the disk's serial number.
	// +optional
	Serial string `json:"serial,omitempty" protobuf:"bytes,4,opt,name=serial"`
}

// DiskDevice is the kind of a disk device; exactly one member is set.
type DiskDevice struct {
	// Disk attaches the volume as a disk.
	// +optional
	Disk *DiskTarget `json:"disk,omitempty" protobuf:"bytes,1,opt,name=disk"`
	// CDRom attaches the volume as a CD-ROM.
	// +optional
	CDRom *CDRomTarget `json:"cdrom,omitempty" protobuf:"bytes,2,opt,name=cdrom"`
}

// DiskTarget is a disk device.
type DiskTarget struct {
	// Bus is virtio, sata, scsi or usb. Defaults to virtio.
	// +optional
	Bus DiskBus `json:"bus,omitempty" protobuf:"bytes,1,opt,name=bus,casttype=DiskBus"`
	// ReadOnly attaches the disk read-only.
	// +optional
	ReadOnly bool `json:"readonly,omitempty" protobuf:"varint,2,opt,name=readonly"`
}

// CDRomTarget is a CD-ROM device.
type CDRomTarget struct {
	// Bus is sata, scsi or usb. Defaults to sata.
	// +optional
	Bus DiskBus `json:"bus,omitempty" protobuf:"bytes,1,opt,name=bus,casttype=DiskBus"`
	// ReadOnly is always true for a CD-ROM.
	// +optional
	ReadOnly *bool `json:"readonly,omitempty" protobuf:"varint,2,opt,name=readonly"`
}

// Interface is a network interface of a guest, attached to the network of the same name.
type Interface struct {
	// Name of the interface; a network of the same name backs it.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Model is the emulated NIC model. Defaults to virtio.
	// +optional
	Model string `json:"model,omitempty" protobuf:"bytes,2,opt,name=model"`
	// InterfaceBindingMethod is how the interface is bound to the pod network.
	InterfaceBindingMethod `json:",inline" protobuf:"bytes,3,opt,name=interfaceBindingMethod"`
	// Ports are forwarded to the guest by the masquerade binding; all ports when empty.
	// +optional
	// +listType=atomic
	Ports []Port `json:"ports,omitempty" protobuf:"bytes,4,rep,name=ports"`
	// MacAddress of the interface, such as de:ad:00:00:be:af.
	// +optional
	MacAddress string `json:"macAddress,omitempty" protobuf:"bytes,5,opt,name=macAddress"`
	// BootOrder is the interface's place in the boot order (PXE).
	// +optional
	BootOrder *uint `json:"bootOrder,omitempty" protobuf:"varint,6,opt,name=bootOrder,casttype=uint"`
}

// InterfaceBindingMethod is how an interface is bound to its network; exactly one is set.
type InterfaceBindingMethod struct {
	// Bridge connects the guest directly to the pod's network interface.
	// +optional
	Bridge *InterfaceBridge `json:"bridge,omitempty" protobuf:"bytes,1,opt,name=bridge"`
	// Masquerade gives the guest a private address behind NAT through the pod's address.
	// +optional
	Masquerade *InterfaceMasquerade `json:"masquerade,omitempty" protobuf:"bytes,2,opt,name=masquerade"`
}

// InterfaceBridge is the bridge binding.
type InterfaceBridge struct{}

// InterfaceMasquerade is the masquerade (NAT) binding.
type InterfaceMasquerade struct{}

// Port is a port forwarded to the guest.
type Port struct {
	// Name of the port.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	// Protocol is TCP or UDP. Defaults to TCP.
	// +optional
	Protocol string `json:"protocol,omitempty" protobuf:"bytes,2,opt,name=protocol"`
	// Port number.
	Port int32 `json:"port" protobuf:"varint,3,opt,name=port"`
}

// Volume is a source of data for a guest's disk.
type Volume struct {
	// Name of the volume; the disk of the same name uses it.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// VolumeSource is where the data comes from; exactly one member is set.
	VolumeSource `json:",inline" protobuf:"bytes,2,opt,name=volumeSource"`
}

// VolumeSource is where a volume's data comes from; exactly one member is set.
type VolumeSource struct {
	// PersistentVolumeClaim attaches a claimed persistent volume (file or block).
	// +optional
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty" protobuf:"bytes,1,opt,name=persistentVolumeClaim"`
	// CloudInitNoCloud attaches a NoCloud cloud-init data source as a disk labelled cidata.
	// +optional
	CloudInitNoCloud *CloudInitNoCloudSource `json:"cloudInitNoCloud,omitempty" protobuf:"bytes,2,opt,name=cloudInitNoCloud"`
	// ContainerDisk attaches a disk image carried in a container image; writes go to an
	// ephemeral overlay and are lost when the instance stops.
	// +optional
	ContainerDisk *ContainerDiskSource `json:"containerDisk,omitempty" protobuf:"bytes,3,opt,name=containerDisk"`
	// EmptyDisk attaches a blank ephemeral disk of the given capacity.
	// +optional
	EmptyDisk *EmptyDiskSource `json:"emptyDisk,omitempty" protobuf:"bytes,4,opt,name=emptyDisk"`
	// DataVolume attaches the claim of a DataVolume (cdi.kubevirt.io), which has the
	// DataVolume's name; the instance waits until CDI has filled it.
	// +optional
	DataVolume *DataVolumeSource `json:"dataVolume,omitempty" protobuf:"bytes,5,opt,name=dataVolume"`
	// MemoryDump is the claim a memory dump of the guest goes to. Only the VM's memorydump
	// action adds one, and no disk names it.
	// +optional
	MemoryDump *MemoryDumpVolumeSource `json:"memoryDump,omitempty" protobuf:"bytes,6,opt,name=memoryDump"`
}

// MemoryDumpVolumeSource is the claim of a memory dump, always hotpluggable: it comes to the
// running guest's node for the dump and leaves it afterwards.
type MemoryDumpVolumeSource struct {
	PersistentVolumeClaimVolumeSource `json:",inline" protobuf:"bytes,1,opt,name=persistentVolumeClaimVolumeSource"`
}

// DataVolumeSource names a DataVolume in the instance's namespace.
type DataVolumeSource struct {
	// Name of the DataVolume, and so of its claim.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Hotpluggable marks the volume as attachable to a running guest.
	// +optional
	Hotpluggable bool `json:"hotpluggable,omitempty" protobuf:"varint,2,opt,name=hotpluggable"`
}

// PersistentVolumeClaimVolumeSource refers to a PersistentVolumeClaim in the instance's namespace.
type PersistentVolumeClaimVolumeSource struct {
	corev1.PersistentVolumeClaimVolumeSource `json:",inline" protobuf:"bytes,1,opt,name=persistentVolumeClaimVolumeSource"`
	// Hotpluggable marks the volume as attachable to a running guest.
	// +optional
	Hotpluggable bool `json:"hotpluggable,omitempty" protobuf:"varint,2,opt,name=hotpluggable"`
}

// CloudInitNoCloudSource is NoCloud cloud-init user and network data.
type CloudInitNoCloudSource struct {
	// UserDataSecretRef names a secret holding the user data under the key userdata.
	// +optional
	UserDataSecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty" protobuf:"bytes,1,opt,name=secretRef"`
	// UserDataBase64 is the user data, base64-encoded.
	// +optional
	UserDataBase64 string `json:"userDataBase64,omitempty" protobuf:"bytes,2,opt,name=userDataBase64"`
	// UserData is the user data, inline.
	// +optional
	UserData string `json:"userData,omitempty" protobuf:"bytes,3,opt,name=userData"`
	// NetworkDataSecretRef names a secret holding the network data under the key networkdata.
	// +optional
	NetworkDataSecretRef *corev1.LocalObjectReference `json:"networkDataSecretRef,omitempty" protobuf:"bytes,4,opt,name=networkDataSecretRef"`
	// NetworkDataBase64 is the network data, base64-encoded.
	// +optional
	NetworkDataBase64 string `json:"networkDataBase64,omitempty" protobuf:"bytes,5,opt,name=networkDataBase64"`
	// NetworkData is the network data, inline.
	// +optional
	NetworkData string `json:"networkData,omitempty" protobuf:"bytes,6,opt,name=networkData"`
}

// ContainerDiskSource is a disk image carried in a container image at /disk/*.img or
// /disk/*.qcow2.
type ContainerDiskSource struct {
	// Image is the container image holding the disk image.
	Image string `json:"image" protobuf:"bytes,1,opt,name=image"`
	// ImagePullSecret is the name of the secret used to pull the image.
	// +optional
	ImagePullSecret string `json:"imagePullSecret,omitempty" protobuf:"bytes,2,opt,name=imagePullSecret"`
	// Path is the disk image's path inside the container image; the one file under /disk when empty.
	// +optional
	Path string `json:"path,omitempty" protobuf:"bytes,3,opt,name=path"`
	// ImagePullPolicy is Always, Never or IfNotPresent.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty" protobuf:"bytes,4,opt,name=imagePullPolicy,casttype=k8s.io/api/core/v1.PullPolicy"`
}

// EmptyDiskSource is a blank, ephemeral disk.
type EmptyDiskSource struct {
	// Capacity of the disk.
	Capacity resource.Quantity `json:"capacity" protobuf:"bytes,1,opt,name=capacity"`
}

// Network is a network an interface of a guest attaches to; exactly one source is set.
type Network struct {
	// Name of the network; the interface of the same name uses it.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// NetworkSource is the kind of network.
	NetworkSource `json:",inline" protobuf:"bytes,2,opt,name=networkSource"`
}

// NetworkSource is the kind of a network; exactly one member is set.
type NetworkSource struct {
	// Pod is the default Kubernetes pod network.
	// +optional
	Pod *PodNetwork `json:"pod,omitempty" protobuf:"bytes,1,opt,name=pod"`
}

// PodNetwork is the pod network, as seen from the guest.
type PodNetwork struct {
	// VMNetworkCIDR is the guest's private IPv4 network for the masquerade binding.
	// Defaults to 10.0.2.0/24.
	// +optional
	VMNetworkCIDR string `json:"vmNetworkCIDR,omitempty" protobuf:"bytes,1,opt,name=vmNetworkCIDR"`
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

// Reasons of a False LiveMigratable condition, as KubeVirt reports them.
const (
	// VirtualMachineInstanceReasonDisksNotMigratable: a disk cannot follow the guest (a
	// claim that is not ReadWriteMany).
	VirtualMachineInstanceReasonDisksNotMigratable = "DisksNotLiveMigratable"
	// VirtualMachineInstanceReasonInterfaceNotMigratable: an interface cannot follow the guest
	// (the bridge binding on the pod network).
	VirtualMachineInstanceReasonInterfaceNotMigratable = "InterfaceNotLiveMigratable"
	// VirtualMachineInstanceReasonNotMigratable: another reason, given in the message.
	VirtualMachineInstanceReasonNotMigratable = "NotMigratable"
)

// VirtualMachineInstanceStatus is the observed state of an instance.
type VirtualMachineInstanceStatus struct {
	// NodeName is the node the instance runs on.
	// +optional
	NodeName string `json:"nodeName,omitempty" protobuf:"bytes,1,opt,name=nodeName"`
	// Reason is a brief CamelCase explanation of the phase, such as why it failed.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,2,opt,name=reason"`
	// Conditions are the latest observations of the instance's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []VirtualMachineInstanceCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,3,rep,name=conditions"`
	// Phase is where the instance is in its lifecycle.
	// +optional
	Phase VirtualMachineInstancePhase `json:"phase,omitempty" protobuf:"bytes,4,opt,name=phase,casttype=VirtualMachineInstancePhase"`
	// PhaseTransitionTimestamps records when the instance entered each phase.
	// +optional
	// +listType=atomic
	PhaseTransitionTimestamps []VirtualMachineInstancePhaseTransitionTimestamp `json:"phaseTransitionTimestamps,omitempty" protobuf:"bytes,5,rep,name=phaseTransitionTimestamps"`
	// Interfaces are the guest's network interfaces with their addresses.
	// +optional
	// +listType=atomic
	Interfaces []VirtualMachineInstanceNetworkInterface `json:"interfaces,omitempty" protobuf:"bytes,6,rep,name=interfaces"`
	// GuestOSInfo describes the guest's operating system, where known.
	// +optional
	GuestOSInfo VirtualMachineInstanceGuestOSInfo `json:"guestOSInfo,omitempty" protobuf:"bytes,7,opt,name=guestOSInfo"`
	// QOSClass is the quality-of-service class of the launcher pod.
	// +optional
	QOSClass *corev1.PodQOSClass `json:"qosClass,omitempty" protobuf:"bytes,8,opt,name=qosClass,casttype=k8s.io/api/core/v1.PodQOSClass"`
	// ActivePods maps the UIDs of the instance's launcher pods to their node names.
	// +optional
	ActivePods map[types.UID]string `json:"activePods,omitempty" protobuf:"bytes,9,rep,name=activePods,castkey=k8s.io/apimachinery/pkg/types.UID"`
	// MigrationState is the state of the instance's current or last live migration.
	// +optional
	MigrationState *VirtualMachineInstanceMigrationState `json:"migrationState,omitempty" protobuf:"bytes,10,opt,name=migrationState"`
	// MigrationMethod says whether a migration copies the instance's local disks
	// (BlockMigration) or moves memory and device state only (LiveMigration).
	// +optional
	MigrationMethod VirtualMachineInstanceMigrationMethod `json:"migrationMethod,omitempty" protobuf:"bytes,11,opt,name=migrationMethod,casttype=VirtualMachineInstanceMigrationMethod"`
	// EvacuationNodeName is the node the instance is to leave: set when an eviction of its
	// launcher pod is turned into a migration. Only Hangar's components set it.
	// +optional
	EvacuationNodeName string `json:"evacuationNodeName,omitempty" protobuf:"bytes,12,opt,name=evacuationNodeName"`
	// FSFreezeStatus is "frozen" while a freeze of the guest's filesystems is in effect.
	// +optional
	FSFreezeStatus string `json:"fsFreezeStatus,omitempty" protobuf:"bytes,13,opt,name=fsFreezeStatus"`
	// VolumeStatus is the state of the instance's hotplugged volumes.
	// +optional
	// +listType=atomic
	VolumeStatus []VolumeStatus `json:"volumeStatus,omitempty" protobuf:"bytes,14,rep,name=volumeStatus"`
}

// VolumeStatus is the state of one of the instance's volumes. KubeVirt reports every volume
// here; Hangar reports the hotplugged ones.
type VolumeStatus struct {
	// Name is the volume's.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Target is the disk's name in the domain (sda, sdb, ...) once attached.
	Target string `json:"target" protobuf:"bytes,2,opt,name=target"`
	// Phase is where the volume is on its way into the guest.
	// +optional
	Phase VolumePhase `json:"phase,omitempty" protobuf:"bytes,3,opt,name=phase,casttype=VolumePhase"`
	// Reason is a brief CamelCase explanation of the phase.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,4,opt,name=reason"`
	// Message says more of the phase, for people.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,5,opt,name=message"`
	// HotplugVolume names the attachment pod that brings a hotplugged claim to the node.
	// +optional
	HotplugVolume *HotplugVolumeStatus `json:"hotplugVolume,omitempty" protobuf:"bytes,6,opt,name=hotplugVolume"`
	// MemoryDumpVolume is the state of a memory dump to the volume.
	// +optional
	MemoryDumpVolume *DomainMemoryDumpInfo `json:"memoryDumpVolume,omitempty" protobuf:"bytes,7,opt,name=memoryDumpVolume"`
}

// DomainMemoryDumpInfo is a memory dump of the guest to a claim.
type DomainMemoryDumpInfo struct {
	// StartTimestamp is when the dump began.
	// +optional
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty" protobuf:"bytes,1,opt,name=startTimestamp"`
	// EndTimestamp is when it ended.
	// +optional
	EndTimestamp *metav1.Time `json:"endTimestamp,omitempty" protobuf:"bytes,2,opt,name=endTimestamp"`
	// ClaimName is the claim the dump goes to.
	// +optional
	ClaimName string `json:"claimName,omitempty" protobuf:"bytes,3,opt,name=claimName"`
	// TargetFileName is the dump's file in the claim's root.
	// +optional
	TargetFileName string `json:"targetFileName,omitempty" protobuf:"bytes,4,opt,name=targetFileName"`
}

// HotplugVolumeStatus names the attachment pod of a hotplugged volume.
type HotplugVolumeStatus struct {
	// AttachPodName is the attachment pod's name.
	// +optional
	AttachPodName string `json:"attachPodName,omitempty" protobuf:"bytes,1,opt,name=attachPodName"`
	// AttachPodUID is the attachment pod's UID.
	// +optional
	AttachPodUID types.UID `json:"attachPodUID,omitempty" protobuf:"bytes,2,opt,name=attachPodUID,casttype=k8s.io/apimachinery/pkg/types.UID"`
}

// VolumePhase is where a volume is on its way into the guest, as KubeVirt names it.
type VolumePhase string

// The phases of a hotplugged volume.
const (
	// VolumePending: the volume waits for its attachment pod.
	VolumePending VolumePhase = "Pending"
	// HotplugVolumeAttachedToNode: the attachment pod runs on the instance's node with the claim.
	HotplugVolumeAttachedToNode VolumePhase = "AttachedToNode"
	// VolumeReady: the guest has the disk.
	VolumeReady VolumePhase = "Ready"
	// HotplugVolumeDetaching: the volume is leaving the guest.
	HotplugVolumeDetaching VolumePhase = "Detaching"
	// MemoryDumpVolumeInProgress: the guest's memory is being written to the claim.
	MemoryDumpVolumeInProgress VolumePhase = "MemoryDumpInProgress"
	// MemoryDumpVolumeCompleted: the dump is on the claim.
	MemoryDumpVolumeCompleted VolumePhase = "MemoryDumpCompleted"
	// MemoryDumpVolumeFailed: the dump failed (the message says why).
	MemoryDumpVolumeFailed VolumePhase = "MemoryDumpFailed"
)

// VolumeReasonAttachmentPodPending is the reason of a hotplugged volume that waits for its
// attachment pod (addvolume sets it, virt-controller keeps it until the pod runs).
const VolumeReasonAttachmentPodPending = "AttachmentPodPending"

// VirtualMachineInstanceCondition is one observation of an instance's state.
type VirtualMachineInstanceCondition struct {
	// Type of the condition.
	Type VirtualMachineInstanceConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=VirtualMachineInstanceConditionType"`
	// Status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status" protobuf:"bytes,2,opt,name=status,casttype=k8s.io/api/core/v1.ConditionStatus"`
	// LastProbeTime is when the condition was last checked.
	// +optional
	// +nullable
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty" protobuf:"bytes,3,opt,name=lastProbeTime"`
	// LastTransitionTime is when the condition last changed status.
	// +optional
	// +nullable
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty" protobuf:"bytes,4,opt,name=lastTransitionTime"`
	// Reason is a one-word CamelCase reason for the condition's last transition.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,5,opt,name=reason"`
	// Message is a human-readable explanation of the last transition.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,6,opt,name=message"`
}

// VirtualMachineInstancePhaseTransitionTimestamp is when an instance entered a phase.
type VirtualMachineInstancePhaseTransitionTimestamp struct {
	// Phase entered.
	// +optional
	Phase VirtualMachineInstancePhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=VirtualMachineInstancePhase"`
	// PhaseTransitionTimestamp is when the phase was entered.
	// +optional
	PhaseTransitionTimestamp metav1.Time `json:"phaseTransitionTimestamp,omitempty" protobuf:"bytes,2,opt,name=phaseTransitionTimestamp"`
}

// VirtualMachineInstanceNetworkInterface is a network interface of a running guest.
type VirtualMachineInstanceNetworkInterface struct {
	// IP is the interface's primary address; for the masquerade binding, the pod's address.
	// +optional
	IP string `json:"ipAddress,omitempty" protobuf:"bytes,1,opt,name=ipAddress"`
	// MAC address of the interface.
	// +optional
	MAC string `json:"mac,omitempty" protobuf:"bytes,2,opt,name=mac"`
	// Name of the interface in the instance spec.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,3,opt,name=name"`
	// IPs are all addresses of the interface.
	// +optional
	// +listType=atomic
	IPs []string `json:"ipAddresses,omitempty" protobuf:"bytes,4,rep,name=ipAddresses"`
	// InterfaceName is the interface's name inside the guest, where known.
	// +optional
	InterfaceName string `json:"interfaceName,omitempty" protobuf:"bytes,5,opt,name=interfaceName"`
	// PodInterfaceName is the pod interface the guest interface is bound to.
	// +optional
	PodInterfaceName string `json:"podInterfaceName,omitempty" protobuf:"bytes,6,opt,name=podInterfaceName"`
	// InfoSource says where the information came from: domain, guest-agent or both.
	// +optional
	InfoSource string `json:"infoSource,omitempty" protobuf:"bytes,7,opt,name=infoSource"`
}

// VirtualMachineInstanceGuestOSInfo describes a guest's operating system.
type VirtualMachineInstanceGuestOSInfo struct {
	// Name of the operating system.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	// KernelRelease of the guest.
	// +optional
	KernelRelease string `json:"kernelRelease,omitempty" protobuf:"bytes,2,opt,name=kernelRelease"`
	// Version of the operating system.
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,3,opt,name=version"`
	// PrettyName of the operating system.
	// +optional
	PrettyName string `json:"prettyName,omitempty" protobuf:"bytes,4,opt,name=prettyName"`
	// VersionID of the operating system.
	// +optional
	VersionID string `json:"versionId,omitempty" protobuf:"bytes,5,opt,name=versionId"`
	// KernelVersion of the guest.
	// +optional
	KernelVersion string `json:"kernelVersion,omitempty" protobuf:"bytes,6,opt,name=kernelVersion"`
	// Machine is the guest's hardware name.
	// +optional
	Machine string `json:"machine,omitempty" protobuf:"bytes,7,opt,name=machine"`
	// ID of the operating system.
	// +optional
	ID string `json:"id,omitempty" protobuf:"bytes,8,opt,name=id"`
}
