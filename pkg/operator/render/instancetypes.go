package render

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Hangar installs the common instance types and preferences KubeVirt's common-instancetypes
// project defines, under the same names and with the same values, so that a VM written for
// KubeVirt (instancetype: u1.medium, preference: fedora) finds them. The values are the
// project's; the descriptions are Hangar's own. They are cluster-wide objects of virt-api's
// etcd, applied once virt-api serves instancetype.kubevirt.io (PhaseController), and go with
// Hangar's etcd when Hangar is removed.
//
// Series whose instance types ask for hardware Hangar's guests cannot have (cx1 and n1:
// dedicated CPUs; cx1, m1 and n1: huge pages) are installed too, as KubeVirt installs them:
// virt-api warns about them, and refuses a VM that names one with the reason.

// Labels KubeVirt's tools and UIs read on the common objects.
const (
	instancetypeClassLabel   = "instancetype.kubevirt.io/class"
	instancetypeVersionLabel = "instancetype.kubevirt.io/version"
	instancetypeVendorLabel  = "instancetype.kubevirt.io/vendor"
	instancetypeCPULabel     = "instancetype.kubevirt.io/cpu"
	instancetypeMemoryLabel  = "instancetype.kubevirt.io/memory"
	displayNameAnnotation    = "instancetype.kubevirt.io/displayName"
	descriptionAnnotation    = "instancetype.kubevirt.io/description"
	osAnnotation             = "vm.kubevirt.io/os"
	instancetypeVendor       = "hangarvm.io"
)

// size is one instance type of a series: vCPUs, memory and, for the series that use them,
// the huge page size.
type size struct {
	name     string
	cpus     uint32
	memory   string
	pageSize string
}

// series is a family of instance types that differ only in size.
type series struct {
	prefix, class, displayName, description string
	sizes                                   []size
	// shape sets what the series adds to every size.
	shape func(*instancetypev1beta1.VirtualMachineInstancetypeSpec, size)
}

// withHugepages lists each size twice: with 2Mi pages, and with 1Gi pages under <name>1gi.
func withHugepages(sizes ...size) []size {
	var out []size
	for _, s := range sizes {
		s.pageSize = "2Mi"
		out = append(out, s)
	}
	for _, s := range sizes {
		s.name, s.pageSize = s.name+"1gi", "1Gi"
		out = append(out, s)
	}
	return out
}

func hugepages(spec *instancetypev1beta1.VirtualMachineInstancetypeSpec, s size) {
	if s.pageSize != "" {
		spec.Memory.Hugepages = &instancetypev1beta1.Hugepages{PageSize: s.pageSize}
	}
}

var commonSeries = []series{
	{prefix: "u1", class: "general.purpose", displayName: "General Purpose",
		description: "Universal: vCPUs and memory for general purpose workloads, sharing the node's CPUs.",
		sizes: []size{{"nano", 1, "512Mi", ""}, {"micro", 1, "1Gi", ""}, {"small", 1, "2Gi", ""}, {"medium", 1, "4Gi", ""},
			{"2xmedium", 2, "4Gi", ""}, {"large", 2, "8Gi", ""}, {"xlarge", 4, "16Gi", ""}, {"2xlarge", 8, "32Gi", ""},
			{"4xlarge", 16, "64Gi", ""}, {"8xlarge", 32, "128Gi", ""}}},
	{prefix: "o1", class: "overcommitted", displayName: "Overcommitted",
		description: "Overcommitted: the U series with half of the guest's memory requested from the node.",
		sizes: []size{{"nano", 1, "512Mi", ""}, {"micro", 1, "1Gi", ""}, {"small", 1, "2Gi", ""}, {"medium", 1, "4Gi", ""},
			{"large", 2, "8Gi", ""}, {"xlarge", 4, "16Gi", ""}, {"2xlarge", 8, "32Gi", ""}, {"4xlarge", 16, "64Gi", ""},
			{"8xlarge", 32, "128Gi", ""}},
		shape: func(spec *instancetypev1beta1.VirtualMachineInstancetypeSpec, _ size) {
			spec.Memory.OvercommitPercent = 50
		}},
	{prefix: "cx1", class: "compute.exclusive", displayName: "Compute Exclusive",
		description: "Compute exclusive: dedicated CPUs with the node's NUMA topology and huge pages. Not available on Hangar, whose guests share the node's CPUs.",
		sizes: withHugepages(size{"medium", 1, "2Gi", ""}, size{"large", 2, "4Gi", ""}, size{"xlarge", 4, "8Gi", ""},
			size{"2xlarge", 8, "16Gi", ""}, size{"4xlarge", 16, "32Gi", ""}, size{"8xlarge", 32, "64Gi", ""}),
		shape: func(spec *instancetypev1beta1.VirtualMachineInstancetypeSpec, s size) {
			spec.CPU.DedicatedCPUPlacement = ptr.To(true)
			spec.CPU.IsolateEmulatorThread = ptr.To(true)
			spec.CPU.NUMA = &instancetypev1beta1.NUMA{GuestMappingPassthrough: &instancetypev1beta1.NUMAGuestMappingPassthrough{}}
			spec.CPU.MaxSockets = ptr.To(s.cpus)
			spec.IOThreadsPolicy = ptr.To(instancetypev1beta1.IOThreadsPolicyAuto)
			hugepages(spec, s)
		}},
	{prefix: "m1", class: "memory.intensive", displayName: "Memory Intensive",
		description: "Memory intensive: eight times as much memory as vCPUs, backed by huge pages. Not available on Hangar, whose guests have no huge pages.",
		sizes: withHugepages(size{"large", 2, "16Gi", ""}, size{"xlarge", 4, "32Gi", ""}, size{"2xlarge", 8, "64Gi", ""},
			size{"4xlarge", 16, "128Gi", ""}, size{"8xlarge", 32, "256Gi", ""}),
		shape: hugepages},
	{prefix: "n1", class: "network", displayName: "Network",
		description: "Network: dedicated CPUs and 1Gi huge pages for DPDK network functions. Not available on Hangar, whose guests share the node's CPUs.",
		sizes: []size{{"medium", 4, "4Gi", "1Gi"}, {"large", 4, "8Gi", "1Gi"}, {"xlarge", 8, "16Gi", "1Gi"},
			{"2xlarge", 16, "32Gi", "1Gi"}, {"4xlarge", 32, "64Gi", "1Gi"}, {"8xlarge", 64, "128Gi", "1Gi"}},
		shape: func(spec *instancetypev1beta1.VirtualMachineInstancetypeSpec, s size) {
			spec.CPU.DedicatedCPUPlacement = ptr.To(true)
			spec.CPU.IsolateEmulatorThread = ptr.To(true)
			spec.Annotations = map[string]string{"cpu-load-balancing.crio.io": "disable", "cpu-quota.crio.io": "disable",
				"irq-load-balancing.crio.io": "disable"}
			hugepages(spec, s)
		}},
}

// Catalogue is what Objects installs besides the components: the instance types, then the preferences.
func Catalogue() []Object {
	var out []Object
	for _, o := range append(commonInstancetypes(), commonPreferences()...) {
		out = append(out, Object{Phase: PhaseController, Object: o})
	}
	return out
}

// commonInstancetypes are the instance types of every series.
func commonInstancetypes() []runtime.Object {
	var out []runtime.Object
	for _, se := range commonSeries {
		for _, s := range se.sizes {
			it := &instancetypev1beta1.VirtualMachineClusterInstancetype{
				TypeMeta: metav1.TypeMeta{APIVersion: instancetypev1beta1.SchemeGroupVersion.String(), Kind: instancetypev1beta1.KindClusterInstancetype},
				ObjectMeta: metav1.ObjectMeta{
					Name: se.prefix + "." + s.name,
					Labels: map[string]string{
						instancetypeClassLabel: se.class, instancetypeVersionLabel: "1", instancetypeVendorLabel: instancetypeVendor,
						instancetypeCPULabel: fmt.Sprint(s.cpus), instancetypeMemoryLabel: s.memory,
					},
					Annotations: map[string]string{displayNameAnnotation: se.displayName, descriptionAnnotation: se.description},
				},
				Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
					CPU:    instancetypev1beta1.CPUInstancetype{Guest: s.cpus},
					Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse(s.memory)},
				},
			}
			if se.shape != nil {
				se.shape(&it.Spec, s)
			}
			out = append(out, it)
		}
	}
	return out
}

// preference is one common preference: its name, the OS annotation and its settings.
type preference struct {
	name, displayName, os string
	spec                  func() instancetypev1beta1.VirtualMachinePreferenceSpec
}

// Building blocks of the common preferences.
func requirements(cpus uint32, memory string) *instancetypev1beta1.PreferenceRequirements {
	return &instancetypev1beta1.PreferenceRequirements{
		CPU:    &instancetypev1beta1.CPUPreferenceRequirement{Guest: cpus},
		Memory: &instancetypev1beta1.MemoryPreferenceRequirement{Guest: resource.MustParse(memory)},
	}
}

// linuxPreference: virtio disks and NICs and a random number generator.
func linuxPreference(req *instancetypev1beta1.PreferenceRequirements, more ...func(*instancetypev1beta1.VirtualMachinePreferenceSpec)) func() instancetypev1beta1.VirtualMachinePreferenceSpec {
	return func() instancetypev1beta1.VirtualMachinePreferenceSpec {
		spec := instancetypev1beta1.VirtualMachinePreferenceSpec{
			Devices: &instancetypev1beta1.DevicePreferences{
				PreferredDiskBus: v1.DiskBusVirtio, PreferredInterfaceModel: "virtio", PreferredRng: &v1.Rng{},
			},
			Requirements: req,
		}
		for _, m := range more {
			m(&spec)
		}
		return spec
	}
}

func efi(secureBoot bool) func(*instancetypev1beta1.VirtualMachinePreferenceSpec) {
	return func(spec *instancetypev1beta1.VirtualMachinePreferenceSpec) {
		spec.Firmware = &instancetypev1beta1.FirmwarePreferences{PreferredEfi: &v1.EFI{SecureBoot: ptr.To(secureBoot)}}
		if secureBoot {
			spec.Features = &instancetypev1beta1.FeaturePreferences{PreferredSmm: &v1.FeatureState{}}
		}
	}
}

func amd64(spec *instancetypev1beta1.VirtualMachinePreferenceSpec) {
	spec.PreferredArchitecture = ptr.To("amd64")
	if spec.Requirements != nil {
		spec.Requirements.Architecture = ptr.To("amd64")
	}
}

func dedicatedIOThread(spec *instancetypev1beta1.VirtualMachinePreferenceSpec) {
	spec.Devices.PreferredDiskDedicatedIoThread = ptr.To(true)
}

func desktop(spec *instancetypev1beta1.VirtualMachinePreferenceSpec) {
	spec.Devices.PreferredAutoattachInputDevice = ptr.To(true)
	spec.Devices.PreferredInputBus = v1.InputBusVirtio
	spec.Devices.PreferredInputType = v1.InputTypeTablet
}

func virtioTransitional(spec *instancetypev1beta1.VirtualMachinePreferenceSpec) {
	spec.Devices.PreferredUseVirtioTransitional = ptr.To(true)
}

// windows is a Windows preference: Hyper-V enlightenments, Windows' timers and UTC clock, an
// hour to shut down, emulated (sata, e1000e) or virtio devices.
type windows struct {
	topology              instancetypev1beta1.PreferredCPUTopology
	virtio, smm, efi, tpm bool // tpm: a persistent TPM and persistent EFI variables
	nic                   string
	req                   *instancetypev1beta1.PreferenceRequirements
	annotations           map[string]string
}

func (w windows) spec() instancetypev1beta1.VirtualMachinePreferenceSpec {
	enabled := &v1.FeatureState{}
	spec := instancetypev1beta1.VirtualMachinePreferenceSpec{
		Clock: &instancetypev1beta1.ClockPreferences{
			PreferredClockOffset: &v1.ClockOffset{UTC: &v1.ClockOffsetUTC{}},
			PreferredTimer: &v1.Timer{HPET: &v1.HPETTimer{Present: ptr.To(false)}, Hyperv: &v1.HypervTimer{},
				PIT: &v1.PITTimer{TickPolicy: v1.PITTickPolicyDelay}, RTC: &v1.RTCTimer{TickPolicy: v1.RTCTickPolicyCatchup}},
		},
		CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: ptr.To(w.topology)},
		Devices: &instancetypev1beta1.DevicePreferences{
			PreferredAutoattachInputDevice: ptr.To(true), PreferredDiskBus: v1.DiskBusSATA, PreferredInterfaceModel: w.nic,
		},
		Features: &instancetypev1beta1.FeaturePreferences{
			PreferredAcpi: &v1.FeatureState{}, PreferredApic: &v1.FeatureAPIC{},
			PreferredHyperv: &v1.FeatureHyperv{
				Frequencies: enabled, IPI: enabled, Reenlightenment: enabled, Relaxed: enabled, ResetFeature: enabled,
				Runtime: enabled, Spinlocks: &v1.FeatureSpinlocks{Spinlocks: ptr.To[uint32](8191)}, Synic: enabled,
				Synictimer: &v1.SyNICTimer{Direct: &v1.FeatureState{}}, Tlbflush: &v1.TLBFlush{}, VAPIC: enabled, Vpindex: enabled,
			},
		},
		PreferredTerminationGracePeriodSeconds: ptr.To[int64](3600),
		Requirements:                           w.req,
		Annotations:                            w.annotations,
	}
	if w.virtio {
		spec.Devices.PreferredDiskBus, spec.Devices.PreferredInterfaceModel = v1.DiskBusVirtio, "virtio"
		spec.Devices.PreferredInputBus, spec.Devices.PreferredInputType = v1.InputBusVirtio, v1.InputTypeTablet
		spec.Devices.PreferredVideoType = ptr.To("virtio")
	}
	if w.smm {
		spec.Features.PreferredSmm = &v1.FeatureState{}
	}
	if w.efi {
		spec.Firmware = &instancetypev1beta1.FirmwarePreferences{PreferredEfi: &v1.EFI{SecureBoot: ptr.To(true)}}
	}
	if w.tpm {
		spec.Devices.PreferredTPM = &v1.TPMDevice{Persistent: ptr.To(true)}
		spec.Firmware.PreferredEfi.Persistent = ptr.To(true)
	}
	return spec
}

// windowsPreferences are a Windows version with emulated devices and its .virtio variant.
func windowsPreferences(name, displayName string, w windows) []preference {
	virtio := w
	virtio.virtio = true
	return []preference{
		{name: name, displayName: displayName, os: "windows", spec: w.spec},
		{name: name + ".virtio", displayName: displayName + " (virtio)", os: "windows", spec: virtio.spec},
	}
}

func commonPreferenceList() []preference {
	modern := windows{topology: instancetypev1beta1.Sockets, smm: true, efi: true, nic: "e1000e", req: requirements(1, "2Gi")}
	older := windows{topology: instancetypev1beta1.Sockets, nic: "e1000e"}
	withTPM := func(w windows) windows { w.tpm = true; return w }
	withReq := func(w windows, r *instancetypev1beta1.PreferenceRequirements) windows { w.req = r; return w }
	cores := func(w windows) windows { w.topology = instancetypev1beta1.Cores; return w }
	list := []preference{
		{name: "alpine", displayName: "Alpine Linux", os: "linux", spec: linuxPreference(requirements(1, "512Mi"))},
		{name: "centos.stream9", displayName: "CentOS Stream 9", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"), dedicatedIOThread)},
		{name: "centos.stream9.desktop", displayName: "CentOS Stream 9 Desktop", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"), dedicatedIOThread, desktop)},
		{name: "centos.stream10", displayName: "CentOS Stream 10", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"), dedicatedIOThread)},
		{name: "centos.stream10.desktop", displayName: "CentOS Stream 10 Desktop", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"), dedicatedIOThread, desktop)},
		{name: "cirros", displayName: "CirrOS", os: "linux", spec: linuxPreference(requirements(1, "256Mi"))},
		{name: "debian", displayName: "Debian", os: "linux", spec: linuxPreference(requirements(1, "512Mi"), efi(false))},
		{name: "fedora", displayName: "Fedora", os: "linux", spec: linuxPreference(requirements(1, "2Gi"), efi(true), amd64)},
		{name: "legacy", displayName: "Legacy", os: "legacy", spec: func() instancetypev1beta1.VirtualMachinePreferenceSpec {
			return instancetypev1beta1.VirtualMachinePreferenceSpec{Devices: &instancetypev1beta1.DevicePreferences{
				PreferredDiskBus: v1.DiskBusSATA, PreferredInterfaceModel: "e1000"}}
		}},
		{name: "linux", displayName: "Linux", os: "linux", spec: linuxPreference(nil)},
		{name: "linux.efi", displayName: "Linux with EFI", os: "linux", spec: linuxPreference(nil, efi(false))},
		{name: "linux.virtiotransitional", displayName: "Linux with transitional virtio", os: "linux", spec: linuxPreference(nil, virtioTransitional)},
		{name: "opensuse.leap", displayName: "openSUSE Leap", os: "linux", spec: linuxPreference(requirements(1, "2Gi"))},
		{name: "opensuse.tumbleweed", displayName: "openSUSE Tumbleweed", os: "linux", spec: linuxPreference(requirements(1, "2Gi"))},
		{name: "oraclelinux", displayName: "Oracle Linux", os: "linux", spec: linuxPreference(requirements(2, "4Gi"), efi(false))},
		{name: "rhel.7", displayName: "Red Hat Enterprise Linux 7", os: "linux", spec: linuxPreference(requirements(1, "1Gi"))},
		{name: "rhel.7.desktop", displayName: "Red Hat Enterprise Linux 7 Desktop", os: "linux", spec: linuxPreference(requirements(1, "1Gi"), desktop)},
		{name: "rhel.8", displayName: "Red Hat Enterprise Linux 8", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"))},
		{name: "rhel.8.desktop", displayName: "Red Hat Enterprise Linux 8 Desktop", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"), desktop)},
		{name: "rhel.9", displayName: "Red Hat Enterprise Linux 9", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"), dedicatedIOThread, efi(true), amd64)},
		{name: "rhel.9.desktop", displayName: "Red Hat Enterprise Linux 9 Desktop", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"), dedicatedIOThread, desktop, efi(true), amd64)},
		{name: "rhel.10", displayName: "Red Hat Enterprise Linux 10", os: "linux", spec: linuxPreference(requirements(1, "1.5Gi"), dedicatedIOThread, efi(true), amd64)},
		{name: "sles", displayName: "SUSE Linux Enterprise Server", os: "linux", spec: linuxPreference(requirements(1, "2Gi"))},
		{name: "ubuntu", displayName: "Ubuntu", os: "linux", spec: linuxPreference(requirements(1, "2Gi"))},
	}
	list = append(list, windowsPreferences("windows.10", "Microsoft Windows 10", cores(modern))...)
	list = append(list, windowsPreferences("windows.11", "Microsoft Windows 11", withReq(withTPM(cores(modern)), requirements(2, "4Gi")))...)
	list = append(list, windowsPreferences("windows.2k12", "Microsoft Windows Server 2012", withReq(older, requirements(1, "512Mi")))...)
	list = append(list, windowsPreferences("windows.2k16", "Microsoft Windows Server 2016", modern)...)
	list = append(list, windowsPreferences("windows.2k19", "Microsoft Windows Server 2019", modern)...)
	list = append(list, windowsPreferences("windows.2k22", "Microsoft Windows Server 2022", withTPM(modern))...)
	list = append(list, windowsPreferences("windows.2k25", "Microsoft Windows Server 2025", withTPM(modern))...)
	list = append(list, windowsPreferences("windows.2k8", "Microsoft Windows Server 2008", withReq(older, requirements(1, "512Mi")))...)
	list = append(list, windowsPreferences("windows.7", "Microsoft Windows 7", withReq(older, requirements(1, "2Gi")))...)
	return list
}

// commonPreferences are the common preferences.
func commonPreferences() []runtime.Object {
	var out []runtime.Object
	for _, p := range commonPreferenceList() {
		spec := p.spec()
		if spec.Annotations == nil {
			spec.Annotations = map[string]string{}
		}
		spec.Annotations[osAnnotation] = p.os
		out = append(out, &instancetypev1beta1.VirtualMachineClusterPreference{
			TypeMeta: metav1.TypeMeta{APIVersion: instancetypev1beta1.SchemeGroupVersion.String(), Kind: instancetypev1beta1.KindClusterPreference},
			ObjectMeta: metav1.ObjectMeta{
				Name:        p.name,
				Labels:      map[string]string{instancetypeVendorLabel: instancetypeVendor},
				Annotations: map[string]string{displayNameAnnotation: p.displayName},
			},
			Spec: spec,
		})
	}
	return out
}
