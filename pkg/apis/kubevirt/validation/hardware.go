package validation

import (
	"fmt"
	"math"
	"regexp"
	"time"
	// Time zones are checked against the IANA database; virt-api's image has none of its own.
	_ "time/tzdata"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// Bounds and enumerations of the guest hardware fields.
const (
	// MinSpinlocks is the smallest Hyper-V spinlock retry count (KubeVirt's rule; Windows
	// treats smaller counts as "never notify").
	MinSpinlocks = 4096
	// MaxVendorIDLength is the Hyper-V vendor ID's length in CPUID: 12 bytes.
	MaxVendorIDLength = 12
	// MaxInputs bounds devices.inputs: one tablet is what guests use, a few are harmless,
	// each is a USB or virtio device QEMU must emulate.
	MaxInputs = 8
	// MaxCPUFeatures bounds cpu.features; libvirt knows about 200 x86 features.
	MaxCPUFeatures = 256
	// MaxClockOffsetSeconds bounds clock.utc.offsetSeconds: KubeVirt's field is an int32.
	MaxClockOffsetSeconds = math.MaxInt32
	// MaxTimezoneLength bounds clock.timezone; the longest IANA name has 32 characters.
	MaxTimezoneLength = 64
)

var (
	hpetTickPolicies = sets.New(kubevirt.HPETTickPolicyDelay, kubevirt.HPETTickPolicyCatchup, kubevirt.HPETTickPolicyMerge, kubevirt.HPETTickPolicyDiscard)
	pitTickPolicies  = sets.New(kubevirt.PITTickPolicyDelay, kubevirt.PITTickPolicyCatchup, kubevirt.PITTickPolicyDiscard)
	rtcTickPolicies  = sets.New(kubevirt.RTCTickPolicyDelay, kubevirt.RTCTickPolicyCatchup)
	rtcTracks        = sets.New(kubevirt.TrackGuest, kubevirt.TrackWall)
	cpuPolicies      = sets.New("force", "require", "optional", "disable", "forbid")
	inputBuses       = sets.New(kubevirt.InputBusUSB, kubevirt.InputBusVirtio)
	inputTypes       = sets.New(kubevirt.InputTypeTablet)
	// cpuFeatureName is how libvirt's CPU map names features (avx512f, tsc-deadline, vmx).
	cpuFeatureName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	// vendorIDPattern: the vendor ID goes into CPUID and QEMU's command line verbatim.
	vendorIDPattern = regexp.MustCompile(`^[A-Za-z0-9 _.-]*$`)
	timezonePattern = regexp.MustCompile(`^[A-Za-z0-9_+/-]+$`)
)

// featureOn is whether a feature the spec may leave out is on: given and not disabled.
func featureOn(s *kubevirt.FeatureState) bool {
	return s != nil && (s.Enabled == nil || *s.Enabled)
}

// secureBoot is whether the spec boots EFI with Secure Boot (its default).
func secureBoot(domain *kubevirt.DomainSpec) bool {
	fw := domain.Firmware
	if fw == nil || fw.Bootloader == nil || fw.Bootloader.EFI == nil {
		return false
	}
	return fw.Bootloader.EFI.SecureBoot == nil || *fw.Bootloader.EFI.SecureBoot
}

// validateGuestHardware checks firmware, clock, features, CPU features, inputs and the TPM.
func validateGuestHardware(domain *kubevirt.DomainSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if fw := domain.Firmware; fw != nil && fw.Bootloader != nil {
		if fw.Bootloader.BIOS != nil && fw.Bootloader.EFI != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("firmware", "bootloader"), "bios, efi",
				"bios and efi are mutually exclusive"))
		}
		if b := fw.Bootloader.BIOS; b != nil && b.UseSerial != nil && *b.UseSerial &&
			domain.Devices.AutoattachSerialConsole != nil && !*domain.Devices.AutoattachSerialConsole {
			allErrs = append(allErrs, field.Invalid(path.Child("firmware", "bootloader", "bios", "useSerial"), true,
				"the BIOS's serial output needs the serial console (devices.autoattachSerialConsole)"))
		}
	}
	if secureBoot(domain) && (domain.Features == nil || !featureOn(domain.Features.SMM)) {
		// OVMF's Secure Boot build protects its variables with SMM; without it the guest
		// could rewrite the keys, and QEMU refuses the firmware.
		allErrs = append(allErrs, field.Required(path.Child("features", "smm"),
			"EFI Secure Boot (firmware.bootloader.efi.secureBoot, true unless set to false) needs SMM: set features.smm: {}"))
	}
	if tpm := domain.Devices.TPM; tpm != nil && tpm.Enabled != nil && !*tpm.Enabled && tpm.Persistent != nil && *tpm.Persistent {
		allErrs = append(allErrs, field.Invalid(path.Child("devices", "tpm", "persistent"), true,
			"a disabled TPM (enabled: false) has no state to keep"))
	}
	allErrs = append(allErrs, validateClock(domain.Clock, path.Child("clock"))...)
	if f := domain.Features; f != nil && f.Hyperv != nil {
		allErrs = append(allErrs, validateHyperv(f.Hyperv, domain.CPU, path)...)
	}
	if domain.CPU != nil {
		allErrs = append(allErrs, validateCPUFeatures(domain.CPU.Features, path.Child("cpu", "features"))...)
	}
	allErrs = append(allErrs, validateInputs(domain.Devices.Inputs, path.Child("devices", "inputs"))...)
	return allErrs
}

func validateClock(c *kubevirt.Clock, path *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var allErrs field.ErrorList
	if c.UTC != nil && c.Timezone != nil {
		allErrs = append(allErrs, field.Invalid(path, "utc, timezone", "utc and timezone are mutually exclusive"))
	}
	if u := c.UTC; u != nil && u.OffsetSeconds != nil && (*u.OffsetSeconds > MaxClockOffsetSeconds || *u.OffsetSeconds < -MaxClockOffsetSeconds) {
		allErrs = append(allErrs, field.Invalid(path.Child("utc", "offsetSeconds"), *u.OffsetSeconds,
			fmt.Sprintf("must be between %d and %d", -MaxClockOffsetSeconds, MaxClockOffsetSeconds)))
	}
	if tz := c.Timezone; tz != nil {
		tzPath := path.Child("timezone")
		switch name := string(*tz); {
		case len(name) > MaxTimezoneLength:
			allErrs = append(allErrs, field.TooLong(tzPath, name, MaxTimezoneLength))
		case !timezonePattern.MatchString(name):
			allErrs = append(allErrs, field.Invalid(tzPath, name, "must be a time zone name such as Europe/Paris"))
		default:
			if _, err := time.LoadLocation(name); err != nil || name == "Local" {
				allErrs = append(allErrs, field.Invalid(tzPath, name, "is not a time zone of the IANA database (such as Europe/Paris or UTC)"))
			}
		}
	}
	if t := c.Timer; t != nil {
		tPath := path.Child("timer")
		if t.HPET != nil && t.HPET.TickPolicy != "" && !hpetTickPolicies.Has(t.HPET.TickPolicy) {
			allErrs = append(allErrs, field.NotSupported(tPath.Child("hpet", "tickPolicy"), t.HPET.TickPolicy, sets.List(hpetTickPolicies)))
		}
		if t.PIT != nil && t.PIT.TickPolicy != "" && !pitTickPolicies.Has(t.PIT.TickPolicy) {
			allErrs = append(allErrs, field.NotSupported(tPath.Child("pit", "tickPolicy"), t.PIT.TickPolicy, sets.List(pitTickPolicies)))
		}
		if r := t.RTC; r != nil {
			if r.TickPolicy != "" && !rtcTickPolicies.Has(r.TickPolicy) {
				allErrs = append(allErrs, field.NotSupported(tPath.Child("rtc", "tickPolicy"), r.TickPolicy, sets.List(rtcTickPolicies)))
			}
			if r.Track != "" && !rtcTracks.Has(r.Track) {
				allErrs = append(allErrs, field.NotSupported(tPath.Child("rtc", "track"), r.Track, sets.List(rtcTracks)))
			}
		}
	}
	return allErrs
}

// validateHyperv checks the enlightenments' dependencies, as KubeVirt does (QEMU refuses a
// guest whose enlightenments lack theirs, with an error the user would only see on the node).
// Defaulting turns on what a dependency needs when the spec leaves it unset, so an error here
// means the spec turned it off.
func validateHyperv(h *kubevirt.FeatureHyperv, cpu *kubevirt.CPU, domainPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	path := domainPath.Child("features", "hyperv")
	requires := func(on bool, name string, dep *kubevirt.FeatureState, depName string) {
		if on && !featureOn(dep) {
			allErrs = append(allErrs, field.Invalid(path.Child(name), "enabled",
				fmt.Sprintf("requires %s, which is disabled", path.Child(depName).String())))
		}
	}
	requires(featureOn(h.Synic), "synic", h.Vpindex, "vpindex")
	requires(h.Synictimer != nil && featureOn(&h.Synictimer.FeatureState), "synictimer", h.Synic, "synic")
	requires(h.Tlbflush != nil && featureOn(&h.Tlbflush.FeatureState), "tlbflush", h.Vpindex, "vpindex")
	requires(featureOn(h.IPI), "ipi", h.Vpindex, "vpindex")
	requires(featureOn(h.EVMCS), "evmcs", h.VAPIC, "vapic")
	if s := h.Spinlocks; s != nil && featureOn(&s.FeatureState) && s.Spinlocks != nil && *s.Spinlocks < MinSpinlocks {
		allErrs = append(allErrs, field.Invalid(path.Child("spinlocks", "spinlocks"), *s.Spinlocks,
			fmt.Sprintf("must be at least %d", MinSpinlocks)))
	}
	if v := h.Vendorid; v != nil && featureOn(&v.FeatureState) {
		vPath := path.Child("vendorid", "vendorid")
		switch {
		case v.Vendorid == "":
			allErrs = append(allErrs, field.Required(vPath, "the vendor ID the guest sees, at most 12 characters"))
		case len(v.Vendorid) > MaxVendorIDLength:
			allErrs = append(allErrs, field.TooLong(vPath, v.Vendorid, MaxVendorIDLength))
		case !vendorIDPattern.MatchString(v.Vendorid):
			allErrs = append(allErrs, field.Invalid(vPath, v.Vendorid, "must consist of letters, digits, spaces and _.-"))
		}
	}
	if featureOn(h.EVMCS) {
		vmx := false
		if cpu != nil {
			for _, f := range cpu.Features {
				vmx = vmx || (f.Name == "vmx" && (f.Policy == "" || f.Policy == "require"))
			}
		}
		if !vmx {
			allErrs = append(allErrs, field.Required(domainPath.Child("cpu", "features"),
				"evmcs needs the CPU feature vmx with policy require"))
		}
	}
	return allErrs
}

func validateCPUFeatures(features []kubevirt.CPUFeature, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(features) > MaxCPUFeatures {
		return field.ErrorList{field.TooMany(path, len(features), MaxCPUFeatures)}
	}
	seen := sets.New[string]()
	for i, f := range features {
		idx := path.Index(i)
		switch {
		case f.Name == "":
			allErrs = append(allErrs, field.Required(idx.Child("name"), ""))
		case !cpuFeatureName.MatchString(f.Name):
			allErrs = append(allErrs, field.Invalid(idx.Child("name"), f.Name, "must be a CPU feature name as libvirt writes it (lower case, such as pcid or tsc-deadline)"))
		case seen.Has(f.Name):
			allErrs = append(allErrs, field.Duplicate(idx.Child("name"), f.Name))
		}
		seen.Insert(f.Name)
		if f.Policy != "" && !cpuPolicies.Has(f.Policy) {
			allErrs = append(allErrs, field.NotSupported(idx.Child("policy"), f.Policy, sets.List(cpuPolicies)))
		}
	}
	return allErrs
}

func validateInputs(inputs []kubevirt.Input, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(inputs) > MaxInputs {
		return field.ErrorList{field.TooMany(path, len(inputs), MaxInputs)}
	}
	names := sets.New[string]()
	for i, in := range inputs {
		idx := path.Index(i)
		validateMemberName(in.Name, names, idx.Child("name"), &allErrs)
		if !inputBuses.Has(in.Bus) {
			allErrs = append(allErrs, field.NotSupported(idx.Child("bus"), in.Bus, sets.List(inputBuses)))
		}
		if !inputTypes.Has(in.Type) {
			allErrs = append(allErrs, field.NotSupported(idx.Child("type"), in.Type, sets.List(inputTypes)))
		}
	}
	return allErrs
}
