package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubevirtv1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstancetype is an instance type of one namespace: the vCPUs, the memory and
// the other resource-related settings a VirtualMachine takes when it names it.
type VirtualMachineInstancetype struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is what the instance type gives a VirtualMachine.
	Spec VirtualMachineInstancetypeSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstancetypeList is a list of VirtualMachineInstancetypes.
type VirtualMachineInstancetypeList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineInstancetypes.
	Items []VirtualMachineInstancetype `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClusterInstancetype is an instance type every namespace can use.
type VirtualMachineClusterInstancetype struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is what the instance type gives a VirtualMachine.
	Spec VirtualMachineInstancetypeSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClusterInstancetypeList is a list of VirtualMachineClusterInstancetypes.
type VirtualMachineClusterInstancetypeList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineClusterInstancetypes.
	Items []VirtualMachineClusterInstancetype `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineInstancetypeSpec is what an instance type fixes for the VirtualMachines that
// name it. cpu.guest and memory.guest are required; a VirtualMachine that names an instance
// type may not set what the instance type sets.
type VirtualMachineInstancetypeSpec struct {
	// NodeSelector must match a node's labels for the guest to be scheduled there.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty" protobuf:"bytes,1,rep,name=nodeSelector"`
	// SchedulerName is the scheduler of the guest's launcher pod.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty" protobuf:"bytes,2,opt,name=schedulerName"`
	// CPU is the guest's vCPUs and how they are placed.
	CPU CPUInstancetype `json:"cpu" protobuf:"bytes,3,opt,name=cpu"`
	// Memory is the guest's memory.
	Memory MemoryInstancetype `json:"memory" protobuf:"bytes,4,opt,name=memory"`
	// Gpus are the GPUs the guest gets. Not supported by Hangar: a VirtualMachine naming an
	// instance type that sets it is refused.
	// +optional
	// +listType=atomic
	Gpus []GPU `json:"gpus,omitempty" protobuf:"bytes,5,rep,name=gpus"`
	// HostDevices the guest gets. Not supported by Hangar.
	// +optional
	// +listType=atomic
	HostDevices []HostDevice `json:"hostDevices,omitempty" protobuf:"bytes,6,rep,name=hostDevices"`
	// IOThreadsPolicy says how disks share I/O threads: shared, auto or supplementalPool. Not
	// supported by Hangar.
	// +optional
	IOThreadsPolicy *IOThreadsPolicy `json:"ioThreadsPolicy,omitempty" protobuf:"bytes,7,opt,name=ioThreadsPolicy,casttype=IOThreadsPolicy"`
	// LaunchSecurity is memory encryption (AMD SEV). Not supported by Hangar.
	// +optional
	LaunchSecurity *LaunchSecurity `json:"launchSecurity,omitempty" protobuf:"bytes,8,opt,name=launchSecurity"`
	// Annotations the instance gets; an annotation the VirtualMachine's template sets to
	// another value is a conflict.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,9,rep,name=annotations"`
	// IOThreads sizes the I/O thread pool of the supplementalPool policy. Not supported by
	// Hangar.
	// +optional
	IOThreads *DiskIOThreads `json:"ioThreads,omitempty" protobuf:"bytes,10,opt,name=ioThreads"`
}

// CPUInstancetype is the CPU part of an instance type.
type CPUInstancetype struct {
	// Guest is the number of vCPUs the guest sees; how they form sockets, cores and threads
	// is the preference's preferredCPUTopology (sockets by default).
	Guest uint32 `json:"guest" protobuf:"varint,1,opt,name=guest"`
	// Model is the CPU model: host-model, host-passthrough or a named libvirt model.
	// +optional
	Model *string `json:"model,omitempty" protobuf:"bytes,2,opt,name=model"`
	// DedicatedCPUPlacement pins each vCPU to a physical CPU of its own. Not supported by
	// Hangar.
	// +optional
	DedicatedCPUPlacement *bool `json:"dedicatedCPUPlacement,omitempty" protobuf:"varint,3,opt,name=dedicatedCPUPlacement"`
	// NUMA is the guest's NUMA topology. Not supported by Hangar.
	// +optional
	NUMA *NUMA `json:"numa,omitempty" protobuf:"bytes,4,opt,name=numa"`
	// IsolateEmulatorThread gives QEMU's emulator thread a physical CPU of its own. Not
	// supported by Hangar.
	// +optional
	IsolateEmulatorThread *bool `json:"isolateEmulatorThread,omitempty" protobuf:"varint,5,opt,name=isolateEmulatorThread"`
	// Realtime tunes the guest for low latency. Not supported by Hangar.
	// +optional
	Realtime *Realtime `json:"realtime,omitempty" protobuf:"bytes,6,opt,name=realtime"`
	// MaxSockets is how many sockets CPU hotplug may reach. Hangar does not hotplug CPUs and
	// takes it as given.
	// +optional
	MaxSockets *uint32 `json:"maxSockets,omitempty" protobuf:"varint,7,opt,name=maxSockets"`
}

// MemoryInstancetype is the memory part of an instance type.
type MemoryInstancetype struct {
	// Guest is the memory the guest sees.
	Guest resource.Quantity `json:"guest" protobuf:"bytes,1,opt,name=guest"`
	// Hugepages backs the guest's memory with huge pages. Not supported by Hangar.
	// +optional
	Hugepages *Hugepages `json:"hugepages,omitempty" protobuf:"bytes,2,opt,name=hugepages"`
	// OvercommitPercent lowers the launcher pod's memory request below the guest's memory by
	// this percentage (0-100). Defaults to 0.
	// +optional
	OvercommitPercent int `json:"overcommitPercent,omitempty" protobuf:"varint,3,opt,name=overcommitPercent,casttype=int"`
	// MaxGuest is how far memory hotplug may grow the guest's memory. Hangar does not hotplug
	// memory and takes it as given.
	// +optional
	MaxGuest *resource.Quantity `json:"maxGuest,omitempty" protobuf:"bytes,4,opt,name=maxGuest"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachinePreference is a preference of one namespace: the settings a guest operating
// system runs best with, applied where a VirtualMachine that names it leaves them unset.
type VirtualMachinePreference struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is the preferred settings.
	Spec VirtualMachinePreferenceSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachinePreferenceList is a list of VirtualMachinePreferences.
type VirtualMachinePreferenceList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachinePreferences.
	Items []VirtualMachinePreference `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClusterPreference is a preference every namespace can use.
type VirtualMachineClusterPreference struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is the preferred settings.
	Spec VirtualMachinePreferenceSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClusterPreferenceList is a list of VirtualMachineClusterPreferences.
type VirtualMachineClusterPreferenceList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineClusterPreferences.
	Items []VirtualMachineClusterPreference `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachinePreferenceSpec is what a preference prefers. Each value applies only where the
// VirtualMachine leaves the field unset; a preference never conflicts with the VirtualMachine.
type VirtualMachinePreferenceSpec struct {
	// Clock is the preferred guest clock.
	// +optional
	Clock *ClockPreferences `json:"clock,omitempty" protobuf:"bytes,1,opt,name=clock"`
	// CPU is the preferred CPU topology and features.
	// +optional
	CPU *CPUPreferences `json:"cpu,omitempty" protobuf:"bytes,2,opt,name=cpu"`
	// Devices is the preferred devices and buses.
	// +optional
	Devices *DevicePreferences `json:"devices,omitempty" protobuf:"bytes,3,opt,name=devices"`
	// Features is the preferred hypervisor features.
	// +optional
	Features *FeaturePreferences `json:"features,omitempty" protobuf:"bytes,4,opt,name=features"`
	// Firmware is the preferred firmware.
	// +optional
	Firmware *FirmwarePreferences `json:"firmware,omitempty" protobuf:"bytes,5,opt,name=firmware"`
	// Machine is the preferred machine type.
	// +optional
	Machine *MachinePreferences `json:"machine,omitempty" protobuf:"bytes,6,opt,name=machine"`
	// Volumes is the preferred storage of the VirtualMachine's DataVolume templates.
	// +optional
	Volumes *VolumePreferences `json:"volumes,omitempty" protobuf:"bytes,7,opt,name=volumes"`
	// PreferredSubdomain is the guest's subdomain.
	// +optional
	PreferredSubdomain *string `json:"preferredSubdomain,omitempty" protobuf:"bytes,8,opt,name=preferredSubdomain"`
	// PreferredTerminationGracePeriodSeconds is how long the guest gets to shut down.
	// +optional
	PreferredTerminationGracePeriodSeconds *int64 `json:"preferredTerminationGracePeriodSeconds,omitempty" protobuf:"varint,9,opt,name=preferredTerminationGracePeriodSeconds"`
	// Requirements are the least vCPUs and memory the guest needs; a VirtualMachine (or its
	// instance type) that gives less is refused.
	// +optional
	Requirements *PreferenceRequirements `json:"requirements,omitempty" protobuf:"bytes,10,opt,name=requirements"`
	// Annotations the instance gets where its template does not set them.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,11,rep,name=annotations"`
	// PreferSpreadSocketToCoreRatio is the sockets-to-cores ratio of the spread topology.
	// Defaults to 2.
	// +optional
	PreferSpreadSocketToCoreRatio uint32 `json:"preferSpreadSocketToCoreRatio,omitempty" protobuf:"varint,12,opt,name=preferSpreadSocketToCoreRatio"`
	// PreferredArchitecture is the guest's architecture where the VirtualMachine names none.
	// Hangar's guests are amd64.
	// +optional
	PreferredArchitecture *string `json:"preferredArchitecture,omitempty" protobuf:"bytes,13,opt,name=preferredArchitecture"`
	// PreferredLaunchSecurity is memory encryption. Not supported by Hangar, which ignores it.
	// +optional
	PreferredLaunchSecurity *LaunchSecurity `json:"preferredLaunchSecurity,omitempty" protobuf:"bytes,14,opt,name=preferredLaunchSecurity"`
}

// VolumePreferences are the preferred settings of a VirtualMachine's DataVolume templates.
type VolumePreferences struct {
	// PreferredStorageClassName is the storage class of DataVolume templates that name none.
	// +optional
	PreferredStorageClassName string `json:"preferredStorageClassName,omitempty" protobuf:"bytes,1,opt,name=preferredStorageClassName"`
}

// PreferredCPUTopology is how an instance type's vCPUs are shown to the guest.
// +enum
type PreferredCPUTopology string

const (
	// DeprecatedPreferCores is cores, by its old name.
	DeprecatedPreferCores PreferredCPUTopology = "preferCores"
	// DeprecatedPreferSockets is sockets, by its old name.
	DeprecatedPreferSockets PreferredCPUTopology = "preferSockets"
	// DeprecatedPreferThreads is threads, by its old name.
	DeprecatedPreferThreads PreferredCPUTopology = "preferThreads"
	// DeprecatedPreferSpread is spread, by its old name.
	DeprecatedPreferSpread PreferredCPUTopology = "preferSpread"
	// DeprecatedPreferAny is any, by its old name.
	DeprecatedPreferAny PreferredCPUTopology = "preferAny"
	// Cores shows every vCPU as a core of one socket.
	Cores PreferredCPUTopology = "cores"
	// Sockets shows every vCPU as a socket of its own: the default.
	Sockets PreferredCPUTopology = "sockets"
	// Threads shows every vCPU as a thread of one core.
	Threads PreferredCPUTopology = "threads"
	// Spread spreads the vCPUs over sockets and cores (or cores and threads) by spreadOptions.
	Spread PreferredCPUTopology = "spread"
	// Any takes the template's topology when it has one, and sockets otherwise.
	Any PreferredCPUTopology = "any"
)

// CPUPreferences are the preferred CPU topology and features.
type CPUPreferences struct {
	// PreferredCPUTopology is how the instance type's vCPUs are shown to the guest. Defaults
	// to sockets.
	// +optional
	PreferredCPUTopology *PreferredCPUTopology `json:"preferredCPUTopology,omitempty" protobuf:"bytes,1,opt,name=preferredCPUTopology,casttype=PreferredCPUTopology"`
	// SpreadOptions shape the spread topology.
	// +optional
	SpreadOptions *SpreadOptions `json:"spreadOptions,omitempty" protobuf:"bytes,2,opt,name=spreadOptions"`
	// PreferredCPUFeatures are added to the guest's CPU unless it names them already.
	// +optional
	// +listType=atomic
	PreferredCPUFeatures []kubevirtv1.CPUFeature `json:"preferredCPUFeatures,omitempty" protobuf:"bytes,3,rep,name=preferredCPUFeatures"`
}

// SpreadAcross says over which parts of the topology the spread topology spreads vCPUs.
// +enum
type SpreadAcross string

const (
	// SpreadAcrossSocketsCoresThreads spreads over sockets and cores, each core with 2 threads.
	SpreadAcrossSocketsCoresThreads SpreadAcross = "SocketsCoresThreads"
	// SpreadAcrossSocketsCores spreads over sockets and cores: the default.
	SpreadAcrossSocketsCores SpreadAcross = "SocketsCores"
	// SpreadAcrossCoresThreads spreads over cores and threads.
	SpreadAcrossCoresThreads SpreadAcross = "CoresThreads"
)

// SpreadOptions shape the spread topology.
type SpreadOptions struct {
	// Across is SocketsCores (the default), CoresThreads or SocketsCoresThreads.
	// +optional
	Across *SpreadAcross `json:"across,omitempty" protobuf:"bytes,1,opt,name=across,casttype=SpreadAcross"`
	// Ratio is cores per socket (SocketsCores, SocketsCoresThreads) or threads per core
	// (CoresThreads, where only 2 is allowed). Defaults to 2.
	// +optional
	Ratio *uint32 `json:"ratio,omitempty" protobuf:"varint,2,opt,name=ratio"`
}

// DevicePreferences are the preferred devices and buses.
type DevicePreferences struct {
	// PreferredAutoattachGraphicsDevice is autoattachGraphicsDevice where unset.
	// +optional
	PreferredAutoattachGraphicsDevice *bool `json:"preferredAutoattachGraphicsDevice,omitempty" protobuf:"varint,1,opt,name=preferredAutoattachGraphicsDevice"`
	// PreferredAutoattachMemBalloon is autoattachMemBalloon where unset. Hangar has no memory
	// balloon and ignores it.
	// +optional
	PreferredAutoattachMemBalloon *bool `json:"preferredAutoattachMemBalloon,omitempty" protobuf:"varint,2,opt,name=preferredAutoattachMemBalloon"`
	// PreferredAutoattachPodInterface is autoattachPodInterface where unset.
	// +optional
	PreferredAutoattachPodInterface *bool `json:"preferredAutoattachPodInterface,omitempty" protobuf:"varint,3,opt,name=preferredAutoattachPodInterface"`
	// PreferredAutoattachSerialConsole is autoattachSerialConsole where unset.
	// +optional
	PreferredAutoattachSerialConsole *bool `json:"preferredAutoattachSerialConsole,omitempty" protobuf:"varint,4,opt,name=preferredAutoattachSerialConsole"`
	// PreferredAutoattachInputDevice is autoattachInputDevice where unset.
	// +optional
	PreferredAutoattachInputDevice *bool `json:"preferredAutoattachInputDevice,omitempty" protobuf:"varint,5,opt,name=preferredAutoattachInputDevice"`
	// PreferredDisableHotplug is disableHotplug. Hangar does not hotplug volumes and ignores it.
	// +optional
	PreferredDisableHotplug *bool `json:"preferredDisableHotplug,omitempty" protobuf:"varint,6,opt,name=preferredDisableHotplug"`
	// PreferredVirtualGPUOptions are the options of virtual GPUs. Ignored by Hangar.
	// +optional
	PreferredVirtualGPUOptions *VGPUOptions `json:"preferredVirtualGPUOptions,omitempty" protobuf:"bytes,7,opt,name=preferredVirtualGPUOptions"`
	// PreferredSoundModel is the model of a sound device. Hangar has no sound devices and
	// ignores it.
	// +optional
	PreferredSoundModel string `json:"preferredSoundModel,omitempty" protobuf:"bytes,8,opt,name=preferredSoundModel"`
	// PreferredUseVirtioTransitional is useVirtioTransitional where unset.
	// +optional
	PreferredUseVirtioTransitional *bool `json:"preferredUseVirtioTransitional,omitempty" protobuf:"varint,9,opt,name=preferredUseVirtioTransitional"`
	// PreferredInputBus is the bus of input devices that name none.
	// +optional
	PreferredInputBus kubevirtv1.InputBus `json:"preferredInputBus,omitempty" protobuf:"bytes,10,opt,name=preferredInputBus,casttype=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.InputBus"`
	// PreferredInputType is the type of input devices that name none.
	// +optional
	PreferredInputType kubevirtv1.InputType `json:"preferredInputType,omitempty" protobuf:"bytes,11,opt,name=preferredInputType,casttype=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.InputType"`
	// PreferredDiskBus is the bus of disks that name none.
	// +optional
	PreferredDiskBus kubevirtv1.DiskBus `json:"preferredDiskBus,omitempty" protobuf:"bytes,12,opt,name=preferredDiskBus,casttype=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.DiskBus"`
	// PreferredLunBus is the bus of LUNs that name none. Hangar has no LUN disks and ignores it.
	// +optional
	PreferredLunBus kubevirtv1.DiskBus `json:"preferredLunBus,omitempty" protobuf:"bytes,13,opt,name=preferredLunBus,casttype=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.DiskBus"`
	// PreferredCdromBus is the bus of CD-ROMs that name none.
	// +optional
	PreferredCdromBus kubevirtv1.DiskBus `json:"preferredCdromBus,omitempty" protobuf:"bytes,14,opt,name=preferredCdromBus,casttype=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.DiskBus"`
	// PreferredDiskDedicatedIoThread gives virtio disks an I/O thread of their own. Ignored by
	// Hangar.
	// +optional
	PreferredDiskDedicatedIoThread *bool `json:"preferredDiskDedicatedIoThread,omitempty" protobuf:"varint,15,opt,name=preferredDiskDedicatedIoThread"`
	// PreferredDiskCache is the host cache mode of disks. Ignored by Hangar.
	// +optional
	PreferredDiskCache DriverCache `json:"preferredDiskCache,omitempty" protobuf:"bytes,16,opt,name=preferredDiskCache,casttype=DriverCache"`
	// PreferredDiskIO is QEMU's I/O mode of disks. Ignored by Hangar.
	// +optional
	PreferredDiskIO DriverIO `json:"preferredDiskIO,omitempty" protobuf:"bytes,17,opt,name=preferredDiskIO,casttype=DriverIO"`
	// PreferredDiskBlockSize is the block size of disks. Ignored by Hangar.
	// +optional
	PreferredDiskBlockSize *BlockSize `json:"preferredDiskBlockSize,omitempty" protobuf:"bytes,18,opt,name=preferredDiskBlockSize"`
	// PreferredInterfaceModel is the model of interfaces that name none.
	// +optional
	PreferredInterfaceModel string `json:"preferredInterfaceModel,omitempty" protobuf:"bytes,19,opt,name=preferredInterfaceModel"`
	// PreferredRng adds a virtio random number generator where none is given.
	// +optional
	PreferredRng *kubevirtv1.Rng `json:"preferredRng,omitempty" protobuf:"bytes,20,opt,name=preferredRng"`
	// PreferredBlockMultiQueue is blockMultiQueue where unset.
	// +optional
	PreferredBlockMultiQueue *bool `json:"preferredBlockMultiQueue,omitempty" protobuf:"varint,21,opt,name=preferredBlockMultiQueue"`
	// PreferredNetworkInterfaceMultiQueue is networkInterfaceMultiqueue where unset.
	// +optional
	PreferredNetworkInterfaceMultiQueue *bool `json:"preferredNetworkInterfaceMultiQueue,omitempty" protobuf:"varint,22,opt,name=preferredNetworkInterfaceMultiQueue"`
	// PreferredTPM adds a TPM where none is given.
	// +optional
	PreferredTPM *kubevirtv1.TPMDevice `json:"preferredTPM,omitempty" protobuf:"bytes,23,opt,name=preferredTPM"`
	// PreferredInterfaceMasquerade binds pod network interfaces that name no binding with
	// masquerade.
	// +optional
	PreferredInterfaceMasquerade *kubevirtv1.InterfaceMasquerade `json:"preferredInterfaceMasquerade,omitempty" protobuf:"bytes,24,opt,name=preferredInterfaceMasquerade"`
	// PreferredPanicDeviceModel is the model of panic devices. Hangar has no panic devices and
	// ignores it.
	// +optional
	PreferredPanicDeviceModel *PanicDeviceModel `json:"preferredPanicDeviceModel,omitempty" protobuf:"bytes,25,opt,name=preferredPanicDeviceModel,casttype=PanicDeviceModel"`
	// PreferredVideoType is the type of the video device. Hangar's guests have one video
	// device of their own and ignore it.
	// +optional
	PreferredVideoType *string `json:"preferredVideoType,omitempty" protobuf:"bytes,26,opt,name=preferredVideoType"`
}

// FeaturePreferences are the preferred hypervisor features.
type FeaturePreferences struct {
	// PreferredAcpi is ACPI where unset.
	// +optional
	PreferredAcpi *kubevirtv1.FeatureState `json:"preferredAcpi,omitempty" protobuf:"bytes,1,opt,name=preferredAcpi"`
	// PreferredApic is the APIC where unset.
	// +optional
	PreferredApic *kubevirtv1.FeatureAPIC `json:"preferredApic,omitempty" protobuf:"bytes,2,opt,name=preferredApic"`
	// PreferredHyperv are Hyper-V enlightenments, each where unset.
	// +optional
	PreferredHyperv *kubevirtv1.FeatureHyperv `json:"preferredHyperv,omitempty" protobuf:"bytes,3,opt,name=preferredHyperv"`
	// PreferredKvm is how the guest sees KVM, where unset.
	// +optional
	PreferredKvm *kubevirtv1.FeatureKVM `json:"preferredKvm,omitempty" protobuf:"bytes,4,opt,name=preferredKvm"`
	// PreferredPvspinlock is pvspinlock where unset.
	// +optional
	PreferredPvspinlock *kubevirtv1.FeatureState `json:"preferredPvspinlock,omitempty" protobuf:"bytes,5,opt,name=preferredPvspinlock"`
	// PreferredSmm is SMM where unset.
	// +optional
	PreferredSmm *kubevirtv1.FeatureState `json:"preferredSmm,omitempty" protobuf:"bytes,6,opt,name=preferredSmm"`
}

// FirmwarePreferences are the preferred firmware.
type FirmwarePreferences struct {
	// PreferredUseBios boots with BIOS when the VirtualMachine names no bootloader.
	// +optional
	PreferredUseBios *bool `json:"preferredUseBios,omitempty" protobuf:"varint,1,opt,name=preferredUseBios"`
	// PreferredUseBiosSerial is the BIOS's useSerial where unset.
	// +optional
	PreferredUseBiosSerial *bool `json:"preferredUseBiosSerial,omitempty" protobuf:"varint,2,opt,name=preferredUseBiosSerial"`
	// PreferredUseEfi boots with EFI when the VirtualMachine names no bootloader.
	// Deprecated: use preferredEfi.
	// +optional
	PreferredUseEfi *bool `json:"preferredUseEfi,omitempty" protobuf:"varint,3,opt,name=preferredUseEfi"`
	// PreferredUseSecureBoot is EFI's secureBoot where unset.
	// Deprecated: use preferredEfi.
	// +optional
	PreferredUseSecureBoot *bool `json:"preferredUseSecureBoot,omitempty" protobuf:"varint,4,opt,name=preferredUseSecureBoot"`
	// PreferredEfi is the EFI bootloader when the VirtualMachine names no bootloader.
	// +optional
	PreferredEfi *kubevirtv1.EFI `json:"preferredEfi,omitempty" protobuf:"bytes,5,opt,name=preferredEfi"`
}

// MachinePreferences are the preferred machine.
type MachinePreferences struct {
	// PreferredMachineType is the machine type where unset.
	// +optional
	PreferredMachineType string `json:"preferredMachineType,omitempty" protobuf:"bytes,1,opt,name=preferredMachineType"`
}

// ClockPreferences are the preferred guest clock.
type ClockPreferences struct {
	// PreferredClockOffset is the clock's offset when the VirtualMachine sets none.
	// +optional
	PreferredClockOffset *kubevirtv1.ClockOffset `json:"preferredClockOffset,omitempty" protobuf:"bytes,1,opt,name=preferredClockOffset"`
	// PreferredTimer is the guest's timers when the VirtualMachine sets none.
	// +optional
	PreferredTimer *kubevirtv1.Timer `json:"preferredTimer,omitempty" protobuf:"bytes,2,opt,name=preferredTimer"`
}

// PreferenceRequirements are the least resources a preference needs.
type PreferenceRequirements struct {
	// CPU is the least vCPUs.
	// +optional
	CPU *CPUPreferenceRequirement `json:"cpu,omitempty" protobuf:"bytes,1,opt,name=cpu"`
	// Memory is the least guest memory.
	// +optional
	Memory *MemoryPreferenceRequirement `json:"memory,omitempty" protobuf:"bytes,2,opt,name=memory"`
	// Architecture is the architecture the guest needs.
	// +optional
	Architecture *string `json:"architecture,omitempty" protobuf:"bytes,3,opt,name=architecture"`
}

// CPUPreferenceRequirement is the least vCPUs a preference needs.
type CPUPreferenceRequirement struct {
	// Guest is the least number of vCPUs.
	Guest uint32 `json:"guest" protobuf:"varint,1,opt,name=guest"`
}

// MemoryPreferenceRequirement is the least memory a preference needs.
type MemoryPreferenceRequirement struct {
	// Guest is the least guest memory.
	Guest resource.Quantity `json:"guest" protobuf:"bytes,1,opt,name=guest"`
}
