package validation

import (
	"fmt"
	"math"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation/podrules"
)

// supportedMachineTypes are KubeVirt's default emulatedMachines for x86_64: q35 and its
// versioned names. Other machines (pc, microvm) have other vCPU limits and devices.
var supportedMachineTypes = []string{"q35*", "pc-q35*"}

// serialPattern is KubeVirt's rule for firmware and disk serial numbers.
var serialPattern = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)

// validateDomain checks the virtual hardware: resources, memory, CPU, machine, firmware and
// the devices of hardware.go.
func validateDomain(domain *kubevirt.DomainSpec, path *field.Path) field.ErrorList {
	allErrs := validateResourcesAndMemory(domain, path)
	allErrs = append(allErrs, validateCPU(domain.CPU, path.Child("cpu"))...)
	if m := domain.Machine; m != nil && m.Type != "" && !matchesAny(supportedMachineTypes, m.Type) {
		allErrs = append(allErrs, field.NotSupported(path.Child("machine", "type"), m.Type, supportedMachineTypes))
	}
	allErrs = append(allErrs, validateFirmware(domain.Firmware, path.Child("firmware"))...)
	return append(allErrs, validateGuestHardware(domain, path)...)
}

func matchesAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(p, s); ok {
			return true
		}
	}
	return false
}

// boundedResources are the resources the launcher pod takes from the spec, and their bounds.
var boundedResources = map[corev1.ResourceName]resource.Quantity{
	corev1.ResourceCPU:    MaxCPU,
	corev1.ResourceMemory: MaxGuestMemory,
}

func validateResourcesAndMemory(domain *kubevirt.DomainSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	resPath := path.Child("resources")
	// usable are the quantities that exact comparisons are safe on.
	usable := func(q resource.Quantity, p *field.Path) bool {
		if !moderate(q) {
			allErrs = append(allErrs, field.Invalid(p, q.String(), "is too large in magnitude"))
			return false
		}
		return true
	}
	check := func(list corev1.ResourceList, p *field.Path) {
		for name, q := range list {
			if !usable(q, p.Key(string(name))) {
				continue
			}
			if q.Sign() < 0 {
				allErrs = append(allErrs, field.Invalid(p.Key(string(name)), q.String(), "must not be negative"))
			}
			if bound, ok := boundedResources[name]; ok && exceeds(q, bound) {
				allErrs = append(allErrs, field.Invalid(p.Key(string(name)), q.String(), fmt.Sprintf("must be at most %s", bound.String())))
			}
		}
	}
	check(domain.Resources.Requests, resPath.Child("requests"))
	check(domain.Resources.Limits, resPath.Child("limits"))
	for name, limit := range domain.Resources.Limits {
		if req, ok := domain.Resources.Requests[name]; ok && moderate(req) && moderate(limit) && req.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(resPath.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit %s", name, limit.String())))
		}
	}

	guestPath := path.Child("memory", "guest")
	if domain.Memory == nil || domain.Memory.Guest == nil {
		return append(allErrs, field.Required(guestPath,
			"the guest needs memory: set domain.memory.guest or domain.resources.requests.memory"))
	}
	guest := *domain.Memory.Guest
	if errs := ValidateGuestMemory(guest, guestPath); len(errs) > 0 {
		return append(allErrs, errs...)
	}
	if limit, ok := domain.Resources.Limits[corev1.ResourceMemory]; ok && moderate(limit) && guest.Cmp(limit) > 0 {
		allErrs = append(allErrs, field.Invalid(guestPath, guest.String(),
			fmt.Sprintf("must be less than or equal to the memory limit %s", limit.String())))
	}
	return allErrs
}

// ValidateGuestMemory checks an amount of guest memory against MinGuestMemory and
// MaxGuestMemory, cheaply for quantities of any magnitude; instance types use it too.
func ValidateGuestMemory(guest resource.Quantity, path *field.Path) field.ErrorList {
	switch {
	case exceeds(guest, MaxGuestMemory):
		return field.ErrorList{field.Invalid(path, guest.String(), fmt.Sprintf("must be at most %s", MaxGuestMemory.String()))}
	case !moderate(guest) || guest.Cmp(MinGuestMemory) < 0:
		return field.ErrorList{field.Invalid(path, guest.String(), fmt.Sprintf("must be at least %s", MinGuestMemory.String()))}
	}
	return nil
}

// Quantities such as 1e999999999 parse, and exact arithmetic on them takes hours (the
// decimal is scaled by 10^999999999 to compare it): a single request would keep virt-api
// busy. Their approximate value is cheap, so these look at it first.

// moderate reports whether q lies within ±2^63, where exact comparisons are cheap; no
// resource quantity is larger (the scheduler counts them in an int64).
func moderate(q resource.Quantity) bool {
	f := q.AsApproximateFloat64()
	return !math.IsNaN(f) && math.Abs(f) <= math.MaxInt64
}

// exceeds reports whether q > bound, comparing exactly only moderate quantities.
func exceeds(q, bound resource.Quantity) bool {
	f, b := q.AsApproximateFloat64(), bound.AsApproximateFloat64()
	switch {
	case math.IsNaN(f) || f > 2*b:
		return true
	case f < -2*b:
		return false
	}
	return q.Cmp(bound) > 0
}

// validateCPU checks each factor of the topology and their product, MaxVCPUs at most.
// Defaulting fills a missing topology (from the CPU request) and missing factors with 1.
func validateCPU(cpu *kubevirt.CPU, path *field.Path) field.ErrorList {
	if cpu == nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, f := range []struct {
		name string
		n    uint32
	}{{"cores", cpu.Cores}, {"sockets", cpu.Sockets}, {"threads", cpu.Threads}} {
		switch {
		case f.n == 0:
			allErrs = append(allErrs, field.Invalid(path.Child(f.name), f.n, "must be at least 1"))
		case f.n > MaxVCPUs:
			allErrs = append(allErrs, field.Invalid(path.Child(f.name), f.n, fmt.Sprintf("must be at most %d", MaxVCPUs)))
		}
	}
	if vcpus := cpu.VCPUs(); len(allErrs) == 0 && vcpus > MaxVCPUs {
		allErrs = append(allErrs, field.Invalid(path, fmt.Sprintf("cores=%d sockets=%d threads=%d", cpu.Cores, cpu.Sockets, cpu.Threads),
			fmt.Sprintf("cores × sockets × threads is %d vCPUs; the q35 machine takes at most %d", vcpus, MaxVCPUs)))
	}
	return allErrs
}

func validateFirmware(fw *kubevirt.Firmware, path *field.Path) field.ErrorList {
	if fw == nil {
		return nil
	}
	var allErrs field.ErrorList
	if fw.UUID != "" {
		// libvirt refuses a domain whose UUID it cannot read: 32 hex digits, with or
		// without the dashes of the usual form.
		if _, err := uuid.Parse(string(fw.UUID)); err != nil || (len(fw.UUID) != 36 && len(fw.UUID) != 32) {
			allErrs = append(allErrs, field.Invalid(path.Child("uuid"), fw.UUID, "must be a UUID such as 5d307ca9-b3ef-428c-8861-06e72d69f223"))
		}
	}
	allErrs = append(allErrs, validateSerial(fw.Serial, path.Child("serial"))...)
	if fw.KernelBoot == nil {
		return allErrs
	}
	kbPath := path.Child("kernelBoot")
	c := fw.KernelBoot.Container
	if c == nil {
		if fw.KernelBoot.KernelArgs != "" {
			allErrs = append(allErrs, field.Required(kbPath.Child("container"), "kernelArgs need a kernel from a kernelBoot container"))
		}
		return allErrs
	}
	cPath := kbPath.Child("container")
	allErrs = append(allErrs, podrules.ValidateImage(c.Image, cPath.Child("image"))...)
	if c.ImagePullSecret != "" {
		allErrs = append(allErrs, podrules.ValidateObjectName(c.ImagePullSecret, cPath.Child("imagePullSecret"))...)
	}
	// KubeVirt takes an initrd alone, but QEMU loads an initrd only with a kernel (-initrd
	// needs -kernel), so the domain could never start.
	if c.KernelPath == "" {
		allErrs = append(allErrs, field.Required(cPath.Child("kernelPath"), "the kernel to boot; an initrd alone cannot boot"))
	}
	allErrs = append(allErrs, validateImagePath(c.KernelPath, cPath.Child("kernelPath"))...)
	allErrs = append(allErrs, validateImagePath(c.InitrdPath, cPath.Child("initrdPath"))...)
	allErrs = append(allErrs, podrules.ValidatePullPolicy(c.ImagePullPolicy, cPath.Child("imagePullPolicy"))...)
	return allErrs
}

// validateSerial is KubeVirt's rule for serial numbers: at most MaxSerialLength characters
// of [A-Za-z0-9_.+-].
func validateSerial(serial string, path *field.Path) field.ErrorList {
	if serial == "" {
		return nil
	}
	if len(serial) > MaxSerialLength {
		return field.ErrorList{field.TooLong(path, serial, MaxSerialLength)}
	}
	if !serialPattern.MatchString(serial) {
		return field.ErrorList{field.Invalid(path, serial, "must consist of the characters [A-Za-z0-9_.+-]")}
	}
	return nil
}

// validateImagePath accepts absolute, clean paths inside an image: the launcher reads them
// from the image's root and must not be led outside it.
func validateImagePath(p string, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return nil
	}
	if !path.IsAbs(p) || path.Clean(p) != p || strings.Contains(p, "..") {
		return field.ErrorList{field.Invalid(fldPath, p, "must be an absolute, clean path without '..'")}
	}
	return nil
}
