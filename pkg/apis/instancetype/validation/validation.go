// Package validation checks instancetype.kubevirt.io objects (internal version) and reports
// every problem as a field.Error with its full path. It accepts what KubeVirt accepts, and
// refuses early what no VirtualMachine could use: an instance type without vCPUs or memory,
// or with more than a guest can have.
package validation

import (
	"fmt"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	kubevirtvalidation "github.com/hangarvm/hangar/pkg/apis/kubevirt/validation"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation/podrules"
)

// Names are DNS subdomains, as KubeVirt's custom resources take them: u1.medium has a dot.
var validateName = apimachineryvalidation.NameIsDNSSubdomain

// ValidateObjectMeta checks an instance type's or preference's metadata on create; namespaced
// is false for the cluster-wide kinds.
func ValidateObjectMeta(meta *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(meta, namespaced, validateName, field.NewPath("metadata"))
}

// ValidateObjectMetaUpdate checks an update's metadata.
func ValidateObjectMetaUpdate(meta, old *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(meta, old, field.NewPath("metadata"))
}

var supportedIOThreadsPolicies = sets.New(instancetype.IOThreadsPolicyShared, instancetype.IOThreadsPolicyAuto,
	instancetype.IOThreadsPolicySupplementalPool)

// ValidateInstancetypeSpec checks what an instance type gives: at least one vCPU and at most
// what a guest can have, guest memory within the guest bounds, an overcommit percentage of
// 0-100 that is not combined with huge pages (KubeVirt's rules), and the launcher pod fields
// as the pod API checks them.
func ValidateInstancetypeSpec(spec *instancetype.VirtualMachineInstancetypeSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	cpuPath := path.Child("cpu")
	switch guest := spec.CPU.Guest; {
	case guest == 0:
		allErrs = append(allErrs, field.Required(cpuPath.Child("guest"), "an instance type gives at least one vCPU"))
	case guest > kubevirtvalidation.MaxVCPUs:
		allErrs = append(allErrs, field.Invalid(cpuPath.Child("guest"), guest,
			fmt.Sprintf("must be at most %d (the q35 machine's vCPUs)", kubevirtvalidation.MaxVCPUs)))
	}
	if m := spec.CPU.MaxSockets; m != nil && *m == 0 {
		allErrs = append(allErrs, field.Invalid(cpuPath.Child("maxSockets"), *m, "must be at least 1"))
	}

	memPath := path.Child("memory")
	guestErrs := kubevirtvalidation.ValidateGuestMemory(spec.Memory.Guest, memPath.Child("guest"))
	allErrs = append(allErrs, guestErrs...)
	if max := spec.Memory.MaxGuest; max != nil {
		maxErrs := kubevirtvalidation.ValidateGuestMemory(*max, memPath.Child("maxGuest"))
		allErrs = append(allErrs, maxErrs...)
		if len(guestErrs) == 0 && len(maxErrs) == 0 && max.Cmp(spec.Memory.Guest) < 0 {
			allErrs = append(allErrs, field.Invalid(memPath.Child("maxGuest"), max.String(),
				fmt.Sprintf("must be at least memory.guest (%s)", spec.Memory.Guest.String())))
		}
	}
	if p := spec.Memory.OvercommitPercent; p < 0 || p > 100 {
		allErrs = append(allErrs, field.Invalid(memPath.Child("overcommitPercent"), p, "must be between 0 and 100"))
	} else if p != 0 && spec.Memory.Hugepages != nil {
		allErrs = append(allErrs, field.Invalid(memPath.Child("overcommitPercent"), p,
			"cannot be combined with memory.hugepages: huge pages cannot be overcommitted"))
	}

	if p := spec.IOThreadsPolicy; p != nil && !supportedIOThreadsPolicies.Has(*p) {
		allErrs = append(allErrs, field.NotSupported(path.Child("ioThreadsPolicy"), *p, sets.List(supportedIOThreadsPolicies)))
	}
	allErrs = append(allErrs, podrules.ValidateNodeSelector(spec.NodeSelector, path.Child("nodeSelector"))...)
	allErrs = append(allErrs, podrules.ValidateSchedulerName(spec.SchedulerName, path.Child("schedulerName"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(spec.Annotations, path.Child("annotations"))...)
	for i, gpu := range spec.Gpus {
		if gpu.Name == "" {
			allErrs = append(allErrs, field.Required(path.Child("gpus").Index(i).Child("name"), ""))
		}
	}
	for i, dev := range spec.HostDevices {
		if dev.Name == "" {
			allErrs = append(allErrs, field.Required(path.Child("hostDevices").Index(i).Child("name"), ""))
		}
	}
	return allErrs
}

// UnsupportedInstancetypeFields are the fields an instance type sets that name hardware
// Hangar's guests do not have. A VirtualMachine naming such an instance type is refused: a
// cx1 guest without dedicated CPUs or an m1 guest without huge pages would not be what its
// owner asked for.
func UnsupportedInstancetypeFields(spec *instancetype.VirtualMachineInstancetypeSpec, path *field.Path) []*field.Path {
	var out []*field.Path
	add := func(set bool, p *field.Path) {
		if set {
			out = append(out, p)
		}
	}
	cpu, mem := path.Child("cpu"), path.Child("memory")
	add(spec.CPU.DedicatedCPUPlacement != nil && *spec.CPU.DedicatedCPUPlacement, cpu.Child("dedicatedCPUPlacement"))
	add(spec.CPU.IsolateEmulatorThread != nil && *spec.CPU.IsolateEmulatorThread, cpu.Child("isolateEmulatorThread"))
	add(spec.CPU.NUMA != nil, cpu.Child("numa"))
	add(spec.CPU.Realtime != nil, cpu.Child("realtime"))
	add(spec.Memory.Hugepages != nil, mem.Child("hugepages"))
	add(len(spec.Gpus) > 0, path.Child("gpus"))
	add(len(spec.HostDevices) > 0, path.Child("hostDevices"))
	add(spec.IOThreadsPolicy != nil, path.Child("ioThreadsPolicy"))
	add(spec.LaunchSecurity != nil, path.Child("launchSecurity"))
	add(spec.IOThreads != nil, path.Child("ioThreads"))
	return out
}

// InstancetypeWarnings tell the writer of an instance type which of its fields Hangar's
// VirtualMachines cannot have.
func InstancetypeWarnings(spec *instancetype.VirtualMachineInstancetypeSpec) []string {
	var out []string
	for _, p := range UnsupportedInstancetypeFields(spec, field.NewPath("spec")) {
		out = append(out, fmt.Sprintf("%s is not supported by Hangar: VirtualMachines using this instance type are refused", p))
	}
	return out
}

var (
	supportedTopologies = sets.New(
		instancetype.DeprecatedPreferSockets, instancetype.DeprecatedPreferCores, instancetype.DeprecatedPreferThreads,
		instancetype.DeprecatedPreferSpread, instancetype.DeprecatedPreferAny,
		instancetype.Sockets, instancetype.Cores, instancetype.Threads, instancetype.Spread, instancetype.Any)
	deprecatedTopologies = map[instancetype.PreferredCPUTopology]instancetype.PreferredCPUTopology{
		instancetype.DeprecatedPreferSockets: instancetype.Sockets,
		instancetype.DeprecatedPreferCores:   instancetype.Cores,
		instancetype.DeprecatedPreferThreads: instancetype.Threads,
		instancetype.DeprecatedPreferSpread:  instancetype.Spread,
		instancetype.DeprecatedPreferAny:     instancetype.Any,
	}
	supportedSpreadAcross = sets.New(instancetype.SpreadAcrossSocketsCores, instancetype.SpreadAcrossCoresThreads,
		instancetype.SpreadAcrossSocketsCoresThreads)
	supportedDiskBuses  = sets.New(kubevirt.DiskBusVirtio, kubevirt.DiskBusSATA, kubevirt.DiskBusSCSI, kubevirt.DiskBusUSB)
	supportedCDRomBuses = sets.New(kubevirt.DiskBusSATA, kubevirt.DiskBusSCSI, kubevirt.DiskBusUSB)
	supportedInputBuses = sets.New(kubevirt.InputBusUSB, kubevirt.InputBusVirtio)
	supportedInputTypes = sets.New(kubevirt.InputTypeTablet)
)

// ValidatePreferenceSpec checks a preference: KubeVirt's rules (known topologies; spread
// across known parts; a cores-and-threads spread has 2 threads per core), requirements a
// guest can meet, and values that would make every VirtualMachine using it invalid.
func ValidatePreferenceSpec(spec *instancetype.VirtualMachinePreferenceSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if cpu := spec.CPU; cpu != nil {
		cpuPath := path.Child("cpu")
		if t := cpu.PreferredCPUTopology; t != nil && !supportedTopologies.Has(*t) {
			allErrs = append(allErrs, field.NotSupported(cpuPath.Child("preferredCPUTopology"), *t, sets.List(supportedTopologies)))
		}
		if IsSpread(spec) {
			ratio, across := SpreadOptions(spec)
			switch {
			case !supportedSpreadAcross.Has(across):
				allErrs = append(allErrs, field.NotSupported(cpuPath.Child("spreadOptions", "across"), across, sets.List(supportedSpreadAcross)))
			case across == instancetype.SpreadAcrossCoresThreads && ratio != 2:
				allErrs = append(allErrs, field.Invalid(cpuPath.Child("spreadOptions", "ratio"), ratio,
					"only a ratio of 2 (1 core, 2 threads) is allowed when spreading vCPUs over cores and threads"))
			case ratio == 0:
				allErrs = append(allErrs, field.Invalid(cpuPath.Child("spreadOptions", "ratio"), ratio, "must be at least 1"))
			}
		}
	}
	if r := spec.Requirements; r != nil {
		reqPath := path.Child("requirements")
		if r.CPU != nil && r.CPU.Guest > kubevirtvalidation.MaxVCPUs {
			allErrs = append(allErrs, field.Invalid(reqPath.Child("cpu", "guest"), r.CPU.Guest,
				fmt.Sprintf("must be at most %d: no guest could meet it", kubevirtvalidation.MaxVCPUs)))
		}
		if r.Memory != nil && r.Memory.Guest.Sign() != 0 {
			allErrs = append(allErrs, kubevirtvalidation.ValidateGuestMemory(r.Memory.Guest, reqPath.Child("memory", "guest"))...)
		}
	}
	if d := spec.Devices; d != nil {
		devPath := path.Child("devices")
		if d.PreferredDiskBus != "" && !supportedDiskBuses.Has(d.PreferredDiskBus) {
			allErrs = append(allErrs, field.NotSupported(devPath.Child("preferredDiskBus"), d.PreferredDiskBus, sets.List(supportedDiskBuses)))
		}
		if d.PreferredCdromBus != "" && !supportedCDRomBuses.Has(d.PreferredCdromBus) {
			allErrs = append(allErrs, field.NotSupported(devPath.Child("preferredCdromBus"), d.PreferredCdromBus, sets.List(supportedCDRomBuses)))
		}
		if d.PreferredInputBus != "" && !supportedInputBuses.Has(d.PreferredInputBus) {
			allErrs = append(allErrs, field.NotSupported(devPath.Child("preferredInputBus"), d.PreferredInputBus, sets.List(supportedInputBuses)))
		}
		if d.PreferredInputType != "" && !supportedInputTypes.Has(d.PreferredInputType) {
			allErrs = append(allErrs, field.NotSupported(devPath.Child("preferredInputType"), d.PreferredInputType, sets.List(supportedInputTypes)))
		}
	}
	if s := spec.PreferredSubdomain; s != nil {
		allErrs = append(allErrs, podrules.ValidateHostname(*s, path.Child("preferredSubdomain"))...)
	}
	if g := spec.PreferredTerminationGracePeriodSeconds; g != nil {
		p := path.Child("preferredTerminationGracePeriodSeconds")
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(*g, p)...)
		if *g > kubevirtvalidation.MaxTerminationGracePeriodSeconds {
			allErrs = append(allErrs, field.Invalid(p, *g, fmt.Sprintf("must be at most %d (one year)", kubevirtvalidation.MaxTerminationGracePeriodSeconds)))
		}
	}
	return append(allErrs, apimachineryvalidation.ValidateAnnotations(spec.Annotations, path.Child("annotations"))...)
}

// PreferenceWarnings name deprecated topologies (KubeVirt's warning) and the preferred values
// Hangar ignores because its guests have no such hardware.
func PreferenceWarnings(spec *instancetype.VirtualMachinePreferenceSpec) []string {
	var out []string
	if spec.CPU != nil && spec.CPU.PreferredCPUTopology != nil {
		if now, ok := deprecatedTopologies[*spec.CPU.PreferredCPUTopology]; ok {
			out = append(out, fmt.Sprintf("spec.cpu.preferredCPUTopology %s is deprecated, use %s", *spec.CPU.PreferredCPUTopology, now))
		}
	}
	if spec.Firmware != nil && (spec.Firmware.PreferredUseEfi != nil || spec.Firmware.PreferredUseSecureBoot != nil) {
		out = append(out, "spec.firmware.preferredUseEfi and preferredUseSecureBoot are deprecated, use spec.firmware.preferredEfi")
	}
	for _, p := range IgnoredPreferenceFields(spec) {
		out = append(out, fmt.Sprintf("spec.devices.%s is ignored by Hangar, whose guests have no such hardware", p))
	}
	if spec.PreferredLaunchSecurity != nil {
		out = append(out, "spec.preferredLaunchSecurity is ignored by Hangar, whose guests have no memory encryption")
	}
	if r := spec.Requirements; r != nil && r.Architecture != nil && *r.Architecture != SupportedArchitecture {
		out = append(out, fmt.Sprintf("spec.requirements.architecture %s: Hangar's guests are %s, VirtualMachines using this preference are refused",
			*r.Architecture, SupportedArchitecture))
	}
	return out
}

// IgnoredPreferenceFields are the device preferences set in spec that Hangar does not apply.
func IgnoredPreferenceFields(spec *instancetype.VirtualMachinePreferenceSpec) []string {
	d := spec.Devices
	if d == nil {
		return nil
	}
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(d.PreferredAutoattachMemBalloon != nil, "preferredAutoattachMemBalloon")
	add(d.PreferredDisableHotplug != nil, "preferredDisableHotplug")
	add(d.PreferredVirtualGPUOptions != nil, "preferredVirtualGPUOptions")
	add(d.PreferredSoundModel != "", "preferredSoundModel")
	add(d.PreferredLunBus != "", "preferredLunBus")
	add(d.PreferredDiskDedicatedIoThread != nil, "preferredDiskDedicatedIoThread")
	add(d.PreferredDiskCache != "", "preferredDiskCache")
	add(d.PreferredDiskIO != "", "preferredDiskIO")
	add(d.PreferredDiskBlockSize != nil, "preferredDiskBlockSize")
	add(d.PreferredPanicDeviceModel != nil, "preferredPanicDeviceModel")
	add(d.PreferredVideoType != nil, "preferredVideoType")
	return out
}

// SupportedArchitecture is the architecture of Hangar's guests.
const SupportedArchitecture = "amd64"

// IsSpread says whether the preference spreads vCPUs over the topology.
func IsSpread(spec *instancetype.VirtualMachinePreferenceSpec) bool {
	if spec == nil || spec.CPU == nil || spec.CPU.PreferredCPUTopology == nil {
		return false
	}
	t := *spec.CPU.PreferredCPUTopology
	return t == instancetype.Spread || t == instancetype.DeprecatedPreferSpread
}

// defaultSpreadRatio is the spread topology's ratio when the preference names none.
const defaultSpreadRatio uint32 = 2

// SpreadOptions are the spread topology's ratio and parts, with KubeVirt's defaults (2,
// SocketsCores); spreadOptions.ratio wins over preferSpreadSocketToCoreRatio.
func SpreadOptions(spec *instancetype.VirtualMachinePreferenceSpec) (uint32, instancetype.SpreadAcross) {
	ratio, across := defaultSpreadRatio, instancetype.SpreadAcrossSocketsCores
	if spec.PreferSpreadSocketToCoreRatio != 0 {
		ratio = spec.PreferSpreadSocketToCoreRatio
	}
	if spec.CPU != nil && spec.CPU.SpreadOptions != nil {
		if spec.CPU.SpreadOptions.Across != nil {
			across = *spec.CPU.SpreadOptions.Across
		}
		if spec.CPU.SpreadOptions.Ratio != nil {
			ratio = *spec.CPU.SpreadOptions.Ratio
		}
	}
	return ratio, across
}
