package instancetype

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstancetype is an instance type of one namespace: the vCPUs, the memory and
// the other resource-related settings a VirtualMachine takes when it names it.
type VirtualMachineInstancetype struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec is what the instance type gives a VirtualMachine.
	Spec VirtualMachineInstancetypeSpec
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstancetypeList is a list of VirtualMachineInstancetypes.
type VirtualMachineInstancetypeList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachineInstancetypes.
	Items []VirtualMachineInstancetype
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClusterInstancetype is an instance type every namespace can use.
type VirtualMachineClusterInstancetype struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec is what the instance type gives a VirtualMachine.
	Spec VirtualMachineInstancetypeSpec
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClusterInstancetypeList is a list of VirtualMachineClusterInstancetypes.
type VirtualMachineClusterInstancetypeList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachineClusterInstancetypes.
	Items []VirtualMachineClusterInstancetype
}

// VirtualMachineInstancetypeSpec is what an instance type fixes for the VirtualMachines that
// name it. cpu.guest and memory.guest are required; a VirtualMachine that names an instance
// type may not set what the instance type sets.
type VirtualMachineInstancetypeSpec struct {
	// NodeSelector must match a node's labels for the guest to be scheduled there.
	NodeSelector map[string]string
	// SchedulerName is the scheduler of the guest's launcher pod.
	SchedulerName string
	// CPU is the guest's vCPUs and how they are placed.
	CPU CPUInstancetype
	// Memory is the guest's memory.
	Memory MemoryInstancetype
	// Gpus are the GPUs the guest gets. Not supported by Hangar: a VirtualMachine naming an
	// instance type that sets it is refused.
	Gpus []GPU
	// HostDevices the guest gets. Not supported by Hangar.
	HostDevices []HostDevice
	// IOThreadsPolicy says how disks share I/O threads: shared, auto or supplementalPool. Not
	// supported by Hangar.
	IOThreadsPolicy *IOThreadsPolicy
	// LaunchSecurity is memory encryption (AMD SEV). Not supported by Hangar.
	LaunchSecurity *LaunchSecurity
	// Annotations the instance gets; an annotation the VirtualMachine's template sets to
	// another value is a conflict.
	Annotations map[string]string
	// IOThreads sizes the I/O thread pool of the supplementalPool policy. Not supported by
	// Hangar.
	IOThreads *DiskIOThreads
}

// CPUInstancetype is the CPU part of an instance type.
type CPUInstancetype struct {
	// Guest is the number of vCPUs the guest sees; how they form sockets, cores and threads
	// is the preference's preferredCPUTopology (sockets by default).
	Guest uint32
	// Model is the CPU model: host-model, host-passthrough or a named libvirt model.
	Model *string
	// DedicatedCPUPlacement pins each vCPU to a physical CPU of its own. Not supported by
	// Hangar.
	DedicatedCPUPlacement *bool
	// NUMA is the guest's NUMA topology. Not supported by Hangar.
	NUMA *NUMA
	// IsolateEmulatorThread gives QEMU's emulator thread a physical CPU of its own. Not
	// supported by Hangar.
	IsolateEmulatorThread *bool
	// Realtime tunes the guest for low latency. Not supported by Hangar.
	Realtime *Realtime
	// MaxSockets is how many sockets CPU hotplug may reach. Hangar does not hotplug CPUs and
	// takes it as given.
	MaxSockets *uint32
}

// MemoryInstancetype is the memory part of an instance type.
type MemoryInstancetype struct {
	// Guest is the memory the guest sees.
	Guest resource.Quantity
	// Hugepages backs the guest's memory with huge pages. Not supported by Hangar.
	Hugepages *Hugepages
	// OvercommitPercent lowers the launcher pod's memory request below the guest's memory by
	// this percentage (0-100). Defaults to 0.
	OvercommitPercent int
	// MaxGuest is how far memory hotplug may grow the guest's memory. Hangar does not hotplug
	// memory and takes it as given.
	MaxGuest *resource.Quantity
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachinePreference is a preference of one namespace: the settings a guest operating
// system runs best with, applied where a VirtualMachine that names it leaves them unset.
type VirtualMachinePreference struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec is the preferred settings.
	Spec VirtualMachinePreferenceSpec
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachinePreferenceList is a list of VirtualMachinePreferences.
type VirtualMachinePreferenceList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachinePreferences.
	Items []VirtualMachinePreference
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClusterPreference is a preference every namespace can use.
type VirtualMachineClusterPreference struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec is the preferred settings.
	Spec VirtualMachinePreferenceSpec
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClusterPreferenceList is a list of VirtualMachineClusterPreferences.
type VirtualMachineClusterPreferenceList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachineClusterPreferences.
	Items []VirtualMachineClusterPreference
}

// VirtualMachinePreferenceSpec is what a preference prefers. Each value applies only where the
// VirtualMachine leaves the field unset; a preference never conflicts with the VirtualMachine.
type VirtualMachinePreferenceSpec struct {
	// Clock is the preferred guest clock.
	Clock *ClockPreferences
	// CPU is the preferred CPU topology and features.
	CPU *CPUPreferences
	// Devices is the preferred devices and buses.
	Devices *DevicePreferences
	// Features is the preferred hypervisor features.
	Features *FeaturePreferences
	// Firmware is the preferred firmware.
	Firmware *FirmwarePreferences
	// Machine is the preferred machine type.
	Machine *MachinePreferences
	// Volumes is the preferred storage of the VirtualMachine's DataVolume templates.
	Volumes *VolumePreferences
	// PreferredSubdomain is the guest's subdomain.
	PreferredSubdomain *string
	// PreferredTerminationGracePeriodSeconds is how long the guest gets to shut down.
	PreferredTerminationGracePeriodSeconds *int64
	// Requirements are the least vCPUs and memory the guest needs; a VirtualMachine (or its
	// instance type) that gives less is refused.
	Requirements *PreferenceRequirements
	// Annotations the instance gets where its template does not set them.
	Annotations map[string]string
	// PreferSpreadSocketToCoreRatio is the sockets-to-cores ratio of the spread topology.
	// Defaults to 2.
	PreferSpreadSocketToCoreRatio uint32
	// PreferredArchitecture is the guest's architecture where the VirtualMachine names none.
	PreferredArchitecture *string
	// PreferredLaunchSecurity is memory encryption. Ignored by Hangar.
	PreferredLaunchSecurity *LaunchSecurity
}

// VolumePreferences are the preferred settings of a VirtualMachine's DataVolume templates.
type VolumePreferences struct {
	// PreferredStorageClassName is the storage class of DataVolume templates that name none.
	PreferredStorageClassName string
}

// PreferredCPUTopology is how an instance type's vCPUs are shown to the guest.
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
	PreferredCPUTopology *PreferredCPUTopology
	// SpreadOptions shape the spread topology.
	SpreadOptions *SpreadOptions
	// PreferredCPUFeatures are added to the guest's CPU unless it names them already.
	PreferredCPUFeatures []kubevirt.CPUFeature
}

// SpreadAcross says over which parts of the topology the spread topology spreads vCPUs.
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
	Across *SpreadAcross
	// Ratio is cores per socket (SocketsCores, SocketsCoresThreads) or threads per core
	// (CoresThreads, where only 2 is allowed). Defaults to 2.
	Ratio *uint32
}

// DevicePreferences are the preferred devices and buses.
type DevicePreferences struct {
	// PreferredAutoattachGraphicsDevice is autoattachGraphicsDevice where unset.
	PreferredAutoattachGraphicsDevice *bool
	// PreferredAutoattachMemBalloon is autoattachMemBalloon where unset. Hangar has no memory
	// balloon and ignores it.
	PreferredAutoattachMemBalloon *bool
	// PreferredAutoattachPodInterface is autoattachPodInterface where unset.
	PreferredAutoattachPodInterface *bool
	// PreferredAutoattachSerialConsole is autoattachSerialConsole where unset.
	PreferredAutoattachSerialConsole *bool
	// PreferredAutoattachInputDevice is autoattachInputDevice where unset.
	PreferredAutoattachInputDevice *bool
	// PreferredDisableHotplug is disableHotplug. Hangar does not hotplug volumes and ignores it.
	PreferredDisableHotplug *bool
	// PreferredVirtualGPUOptions are the options of virtual GPUs. Ignored by Hangar.
	PreferredVirtualGPUOptions *VGPUOptions
	// PreferredSoundModel is the model of a sound device. Hangar has no sound devices and
	// ignores it.
	PreferredSoundModel string
	// PreferredUseVirtioTransitional is useVirtioTransitional where unset.
	PreferredUseVirtioTransitional *bool
	// PreferredInputBus is the bus of input devices that name none.
	PreferredInputBus kubevirt.InputBus
	// PreferredInputType is the type of input devices that name none.
	PreferredInputType kubevirt.InputType
	// PreferredDiskBus is the bus of disks that name none.
	PreferredDiskBus kubevirt.DiskBus
	// PreferredLunBus is the bus of LUNs that name none. Hangar has no LUN disks and ignores it.
	PreferredLunBus kubevirt.DiskBus
	// PreferredCdromBus is the bus of CD-ROMs that name none.
	PreferredCdromBus kubevirt.DiskBus
	// PreferredDiskDedicatedIoThread gives virtio disks an I/O thread of their own. Ignored by
	// Hangar.
	PreferredDiskDedicatedIoThread *bool
	// PreferredDiskCache is the host cache mode of disks. Ignored by Hangar.
	PreferredDiskCache DriverCache
	// PreferredDiskIO is QEMU's I/O mode of disks. Ignored by Hangar.
	PreferredDiskIO DriverIO
	// PreferredDiskBlockSize is the block size of disks. Ignored by Hangar.
	PreferredDiskBlockSize *BlockSize
	// PreferredInterfaceModel is the model of interfaces that name none.
	PreferredInterfaceModel string
	// PreferredRng adds a virtio random number generator where none is given.
	PreferredRng *kubevirt.Rng
	// PreferredBlockMultiQueue is blockMultiQueue where unset.
	PreferredBlockMultiQueue *bool
	// PreferredNetworkInterfaceMultiQueue is networkInterfaceMultiqueue where unset.
	PreferredNetworkInterfaceMultiQueue *bool
	// PreferredTPM adds a TPM where none is given.
	PreferredTPM *kubevirt.TPMDevice
	// PreferredInterfaceMasquerade binds pod network interfaces that name no binding with
	// masquerade.
	PreferredInterfaceMasquerade *kubevirt.InterfaceMasquerade
	// PreferredPanicDeviceModel is the model of panic devices. Hangar has no panic devices and
	// ignores it.
	PreferredPanicDeviceModel *PanicDeviceModel
	// PreferredVideoType is the type of the video device. Ignored by Hangar.
	PreferredVideoType *string
}

// FeaturePreferences are the preferred hypervisor features.
type FeaturePreferences struct {
	// PreferredAcpi is ACPI where unset.
	PreferredAcpi *kubevirt.FeatureState
	// PreferredApic is the APIC where unset.
	PreferredApic *kubevirt.FeatureAPIC
	// PreferredHyperv are Hyper-V enlightenments, each where unset.
	PreferredHyperv *kubevirt.FeatureHyperv
	// PreferredKvm is how the guest sees KVM, where unset.
	PreferredKvm *kubevirt.FeatureKVM
	// PreferredPvspinlock is pvspinlock where unset.
	PreferredPvspinlock *kubevirt.FeatureState
	// PreferredSmm is SMM where unset.
	PreferredSmm *kubevirt.FeatureState
}

// FirmwarePreferences are the preferred firmware.
type FirmwarePreferences struct {
	// PreferredUseBios boots with BIOS when the VirtualMachine names no bootloader.
	PreferredUseBios *bool
	// PreferredUseBiosSerial is the BIOS's useSerial where unset.
	PreferredUseBiosSerial *bool
	// PreferredUseEfi boots with EFI when the VirtualMachine names no bootloader.
	// Deprecated: use preferredEfi.
	PreferredUseEfi *bool
	// PreferredUseSecureBoot is EFI's secureBoot where unset.
	// Deprecated: use preferredEfi.
	PreferredUseSecureBoot *bool
	// PreferredEfi is the EFI bootloader when the VirtualMachine names no bootloader.
	PreferredEfi *kubevirt.EFI
}

// MachinePreferences are the preferred machine.
type MachinePreferences struct {
	// PreferredMachineType is the machine type where unset.
	PreferredMachineType string
}

// ClockPreferences are the preferred guest clock.
type ClockPreferences struct {
	// PreferredClockOffset is the clock's offset when the VirtualMachine sets none.
	PreferredClockOffset *kubevirt.ClockOffset
	// PreferredTimer is the guest's timers when the VirtualMachine sets none.
	PreferredTimer *kubevirt.Timer
}

// PreferenceRequirements are the least resources a preference needs.
type PreferenceRequirements struct {
	// CPU is the least vCPUs.
	CPU *CPUPreferenceRequirement
	// Memory is the least guest memory.
	Memory *MemoryPreferenceRequirement
	// Architecture is the architecture the guest needs.
	Architecture *string
}

// CPUPreferenceRequirement is the least vCPUs a preference needs.
type CPUPreferenceRequirement struct {
	// Guest is the least number of vCPUs.
	Guest uint32
}

// MemoryPreferenceRequirement is the least memory a preference needs.
type MemoryPreferenceRequirement struct {
	// Guest is the least guest memory.
	Guest resource.Quantity
}
