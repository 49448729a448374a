package v1

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Defaults follow KubeVirt's, so an object reads the same after a round trip through either.

const (
	// DefaultGracePeriodSeconds is the time a guest gets to shut down when none is given.
	DefaultGracePeriodSeconds int64 = 30
	// DefaultMachineType is the QEMU machine type when none is given.
	DefaultMachineType = "q35"
	// DefaultNetworkName names the pod network added when a guest declares none.
	DefaultNetworkName = "default"
	// DefaultInterfaceModel is the emulated NIC when none is given.
	DefaultInterfaceModel = "virtio"
)

// SetDefaults_VirtualMachine makes a VM that names no run strategy a stopped one. spec.running
// is left as written: GitOps tools re-apply it, and status.runStrategy reports the effect.
// The template is defaulted as an instance is, unless the VM names an instance type or a
// preference: what they give must not be taken for the user's own (a defaulted topology
// would conflict with the instance type, a defaulted bus hide the preferred one), so such a
// template is kept as written and its instance is defaulted once expanded.
func SetDefaults_VirtualMachine(obj *VirtualMachine) {
	if obj.Spec.Running == nil && obj.Spec.RunStrategy == nil {
		obj.Spec.RunStrategy = ptr.To(RunStrategyHalted)
	}
	if obj.Spec.Template != nil && obj.Spec.Instancetype == nil && obj.Spec.Preference == nil {
		DefaultVirtualMachineInstanceSpec(&obj.Spec.Template.Spec)
	}
}

// SetDefaults_VirtualMachineInstance defaults an instance's spec.
func SetDefaults_VirtualMachineInstance(obj *VirtualMachineInstance) {
	DefaultVirtualMachineInstanceSpec(&obj.Spec)
}

// SetDefaults_VirtualMachineInstanceReplicaSetSpec keeps one instance when no count is given,
// as a ReplicaSet does, and defaults the template as an instance.
func SetDefaults_VirtualMachineInstanceReplicaSetSpec(obj *VirtualMachineInstanceReplicaSetSpec) {
	if obj.Replicas == nil {
		obj.Replicas = ptr.To[int32](1)
	}
	if obj.Template != nil {
		DefaultVirtualMachineInstanceSpec(&obj.Template.Spec)
	}
}

// DefaultVirtualMachineInstanceSpec fills in what a guest needs and the user may leave out;
// it runs for instances and for the templates of replica sets and of VMs without an instance
// type or preference. (Not a SetDefaults_ function: defaulter-gen would run it on every
// embedded spec, VM templates with an instance type included.)
func DefaultVirtualMachineInstanceSpec(obj *VirtualMachineInstanceSpec) {
	if obj.TerminationGracePeriodSeconds == nil {
		obj.TerminationGracePeriodSeconds = ptr.To(DefaultGracePeriodSeconds)
	}
	setDefaultMemory(&obj.Domain)
	setDefaultCPU(&obj.Domain)
	setDefaultGuestHardware(obj)
	if obj.Domain.Machine == nil {
		obj.Domain.Machine = &Machine{Type: DefaultMachineType}
	} else if obj.Domain.Machine.Type == "" {
		obj.Domain.Machine.Type = DefaultMachineType
	}
	if obj.Domain.Features == nil {
		obj.Domain.Features = &Features{}
	}
	if obj.Domain.Features.ACPI.Enabled == nil {
		obj.Domain.Features.ACPI.Enabled = ptr.To(true)
	}
	setDefaultVolumeDisks(obj)
	for i := range obj.Domain.Devices.Disks {
		setDefaultDiskDevice(&obj.Domain.Devices.Disks[i].DiskDevice)
	}
	setDefaultPodNetwork(obj)
	for i := range obj.Domain.Devices.Interfaces {
		setDefaultInterface(&obj.Domain.Devices.Interfaces[i])
	}
}

// setDefaultMemory gives the guest the memory its pod requests (or is limited to).
func setDefaultMemory(domain *DomainSpec) {
	if domain.Memory != nil && domain.Memory.Guest != nil {
		return
	}
	guest, ok := domain.GuestMemory()
	if !ok {
		return // validation reports the missing memory
	}
	if domain.Memory == nil {
		domain.Memory = &Memory{}
	}
	domain.Memory.Guest = ptr.To(guest.DeepCopy())
}

// setDefaultCPU gives a guest without a topology one core per requested (or limited) CPU,
// rounded up, and fills the parts of a partial topology with 1.
func setDefaultCPU(domain *DomainSpec) {
	if domain.CPU == nil {
		cores := uint32(1)
		q, ok := domain.Resources.Limits[corev1.ResourceCPU]
		if !ok {
			q, ok = domain.Resources.Requests[corev1.ResourceCPU]
		}
		// The approximate value first: exact arithmetic on a quantity such as 1e999999999
		// takes hours, and more cores than a uint32 holds would wrap. Validation refuses
		// such a request and the topology it gives.
		if f := q.AsApproximateFloat64(); ok && (math.IsNaN(f) || f > math.MaxUint32) {
			cores = math.MaxUint32
		} else if ok && f > 1 && q.MilliValue() > 1000 {
			cores = uint32((q.MilliValue() + 999) / 1000)
		}
		domain.CPU = &CPU{Cores: cores}
	}
	for _, n := range []*uint32{&domain.CPU.Cores, &domain.CPU.Sockets, &domain.CPU.Threads} {
		if *n == 0 {
			*n = 1
		}
	}
}

// setDefaultVolumeDisks attaches every volume that no disk uses as a disk, as KubeVirt does;
// a memory dump's claim is no disk of the guest.
func setDefaultVolumeDisks(obj *VirtualMachineInstanceSpec) {
	used := make(map[string]bool, len(obj.Domain.Devices.Disks))
	for _, d := range obj.Domain.Devices.Disks {
		used[d.Name] = true
	}
	for _, v := range obj.Volumes {
		if v.Name != "" && !used[v.Name] && v.MemoryDump == nil {
			obj.Domain.Devices.Disks = append(obj.Domain.Devices.Disks, Disk{Name: v.Name})
			used[v.Name] = true
		}
	}
}

func setDefaultDiskDevice(dev *DiskDevice) {
	if dev.Disk == nil && dev.CDRom == nil {
		dev.Disk = &DiskTarget{}
	}
	if dev.Disk != nil && dev.Disk.Bus == "" {
		dev.Disk.Bus = DiskBusVirtio
	}
	if dev.CDRom != nil {
		if dev.CDRom.Bus == "" {
			dev.CDRom.Bus = DiskBusSATA
		}
		if dev.CDRom.ReadOnly == nil {
			dev.CDRom.ReadOnly = ptr.To(true)
		}
	}
}

// setDefaultPodNetwork connects a guest that declares no network to the pod network through
// the masquerade binding, unless autoattachPodInterface is false.
func setDefaultPodNetwork(obj *VirtualMachineInstanceSpec) {
	devices := &obj.Domain.Devices
	if len(devices.Interfaces) > 0 || len(obj.Networks) > 0 {
		return
	}
	if devices.AutoattachPodInterface != nil && !*devices.AutoattachPodInterface {
		return
	}
	obj.Networks = []Network{{Name: DefaultNetworkName, NetworkSource: NetworkSource{Pod: &PodNetwork{}}}}
	devices.Interfaces = []Interface{{
		Name:                   DefaultNetworkName,
		InterfaceBindingMethod: InterfaceBindingMethod{Masquerade: &InterfaceMasquerade{}},
	}}
}

func setDefaultInterface(iface *Interface) {
	if iface.Model == "" {
		iface.Model = DefaultInterfaceModel
	}
	if iface.Bridge == nil && iface.Masquerade == nil {
		iface.Masquerade = &InterfaceMasquerade{}
	}
	for i := range iface.Ports {
		if iface.Ports[i].Protocol == "" {
			iface.Ports[i].Protocol = string(corev1.ProtocolTCP)
		}
	}
}
