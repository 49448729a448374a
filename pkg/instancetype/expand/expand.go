// Package expand applies an instance type and a preference (instancetype.kubevirt.io) to a
// VirtualMachine's template, as KubeVirt does: the instance type sets its fields and refuses a
// template that sets them too (a conflict names both fields), the preference fills in only
// what the template leaves unset, and the preference's requirements are checked against the
// result. Pure functions on the internal types: virt-api validates and expands VMs with them,
// virt-controller builds instances with them.
package expand

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	itvalidation "github.com/hangarvm/hangar/pkg/apis/instancetype/validation"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// Source names an instance type or preference in messages: "VirtualMachineClusterInstancetype u1.medium".
type Source struct {
	Kind, Name string
}

func (s Source) String() string { return s.Kind + " " + s.Name }

// Template applies the instance type (nil: none) and the preference (nil: none) to tmpl in
// place. specPath is the VirtualMachine's spec, whose template tmpl is. It returns the conflicts between the
// template and the instance type, the instance type's fields Hangar cannot give a guest, the
// topologies the preference cannot make of the instance type's vCPUs, and the preference's
// requirements the result does not meet.
func Template(tmpl *kubevirt.VirtualMachineInstanceTemplateSpec, it *instancetype.VirtualMachineInstancetypeSpec, itFrom Source,
	pref *instancetype.VirtualMachinePreferenceSpec, prefFrom Source, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if it != nil {
		allErrs = append(allErrs, applyInstancetype(tmpl, it, itFrom, pref, prefFrom, specPath)...)
	}
	if pref != nil {
		applyPreference(tmpl, pref)
		allErrs = append(allErrs, checkRequirements(&tmpl.Spec, pref, prefFrom, specPath.Child("template", "spec"))...)
	}
	return allErrs
}

// conflict is a template field that the instance type sets too.
func conflict(templateField *field.Path, value interface{}, from Source, itField string) *field.Error {
	return field.Invalid(templateField, value, fmt.Sprintf("conflicts with %s, which sets %s: remove it from the VirtualMachine", from, itField))
}

func applyInstancetype(tmpl *kubevirt.VirtualMachineInstanceTemplateSpec, it *instancetype.VirtualMachineInstancetypeSpec, from Source,
	pref *instancetype.VirtualMachinePreferenceSpec, prefFrom Source, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	path := specPath.Child("template")
	for _, p := range itvalidation.UnsupportedInstancetypeFields(it, field.NewPath("spec")) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("instancetype", "name"), from.Name,
			fmt.Sprintf("%s sets %s, which Hangar's guests cannot have", from, p)))
	}
	spec := &tmpl.Spec
	domainPath := path.Child("spec", "domain")
	domain := &spec.Domain

	// vCPUs: the topology is the preference's way of showing the instance type's count.
	cpuPath := domainPath.Child("cpu")
	if c := domain.CPU; c != nil {
		for name, n := range map[string]uint32{"sockets": c.Sockets, "cores": c.Cores, "threads": c.Threads} {
			if n != 0 {
				allErrs = append(allErrs, conflict(cpuPath.Child(name), n, from, "spec.cpu.guest"))
			}
		}
		if c.Model != "" && it.CPU.Model != nil {
			allErrs = append(allErrs, conflict(cpuPath.Child("model"), c.Model, from, "spec.cpu.model"))
		}
	}
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"requests", domain.Resources.Requests}, {"limits", domain.Resources.Limits}} {
		if q, ok := list.rl[corev1.ResourceCPU]; ok {
			allErrs = append(allErrs, conflict(domainPath.Child("resources", list.name, "cpu"), q.String(), from, "spec.cpu.guest"))
		}
		if q, ok := list.rl[corev1.ResourceMemory]; ok {
			allErrs = append(allErrs, conflict(domainPath.Child("resources", list.name, "memory"), q.String(), from, "spec.memory.guest"))
		}
	}
	if m := domain.Memory; m != nil && m.Guest != nil {
		allErrs = append(allErrs, conflict(domainPath.Child("memory", "guest"), m.Guest.String(), from, "spec.memory.guest"))
	}
	if len(spec.NodeSelector) > 0 && len(it.NodeSelector) > 0 {
		allErrs = append(allErrs, conflict(path.Child("spec", "nodeSelector"), spec.NodeSelector, from, "spec.nodeSelector"))
	}
	if spec.SchedulerName != "" && it.SchedulerName != "" {
		allErrs = append(allErrs, conflict(path.Child("spec", "schedulerName"), spec.SchedulerName, from, "spec.schedulerName"))
	}
	if len(allErrs) > 0 {
		return allErrs
	}

	sockets, cores, threads, err := topology(it.CPU.Guest, pref)
	if err != nil {
		return field.ErrorList{field.Invalid(specPath.Child("preference", "name"), prefFrom.Name,
			fmt.Sprintf("%s cannot show the %d vCPUs of %s: %v", prefFrom, it.CPU.Guest, from, err))}
	}
	if domain.CPU == nil {
		domain.CPU = &kubevirt.CPU{}
	}
	domain.CPU.Sockets, domain.CPU.Cores, domain.CPU.Threads = sockets, cores, threads
	if it.CPU.Model != nil {
		domain.CPU.Model = *it.CPU.Model
	}
	guest := it.Memory.Guest.DeepCopy()
	domain.Memory = &kubevirt.Memory{Guest: &guest}
	if p := it.Memory.OvercommitPercent; p > 0 {
		// The launcher pod asks for less memory than the guest has, as KubeVirt does.
		request := resource.NewQuantity(guest.Value()*int64(100-p)/100, guest.Format)
		if domain.Resources.Requests == nil {
			domain.Resources.Requests = corev1.ResourceList{}
		}
		domain.Resources.Requests[corev1.ResourceMemory] = *request
	}
	if len(it.NodeSelector) > 0 {
		spec.NodeSelector = copyMap(it.NodeSelector)
	}
	if it.SchedulerName != "" {
		spec.SchedulerName = it.SchedulerName
	}
	tmpl.ObjectMeta.Annotations = addMissing(tmpl.ObjectMeta.Annotations, it.Annotations)
	return nil
}

// topology shows guest vCPUs as the preference prefers: sockets by default.
func topology(guest uint32, pref *instancetype.VirtualMachinePreferenceSpec) (sockets, cores, threads uint32, err error) {
	preferred := instancetype.Sockets
	if pref != nil && pref.CPU != nil && pref.CPU.PreferredCPUTopology != nil {
		preferred = *pref.CPU.PreferredCPUTopology
	}
	switch preferred {
	case instancetype.Cores, instancetype.DeprecatedPreferCores:
		return 1, guest, 1, nil
	case instancetype.Threads, instancetype.DeprecatedPreferThreads:
		return 1, 1, guest, nil
	case instancetype.Spread, instancetype.DeprecatedPreferSpread:
		ratio, across := itvalidation.SpreadOptions(pref)
		switch across {
		case instancetype.SpreadAcrossCoresThreads:
			if guest%ratio != 0 {
				return 0, 0, 0, fmt.Errorf("%d vCPUs do not make cores of %d threads", guest, ratio)
			}
			return 1, guest / ratio, ratio, nil
		case instancetype.SpreadAcrossSocketsCoresThreads:
			if guest%(ratio*2) != 0 {
				return 0, 0, 0, fmt.Errorf("%d vCPUs do not make sockets of %d cores of 2 threads", guest, ratio)
			}
			return guest / (ratio * 2), ratio, 2, nil
		default:
			if guest%ratio != 0 {
				return 0, 0, 0, fmt.Errorf("%d vCPUs do not make sockets of %d cores", guest, ratio)
			}
			return guest / ratio, ratio, 1, nil
		}
	default: // sockets, any
		return guest, 1, 1, nil
	}
}

// checkRequirements refuses a guest with fewer vCPUs or less memory than the preference needs.
func checkRequirements(spec *kubevirt.VirtualMachineInstanceSpec, pref *instancetype.VirtualMachinePreferenceSpec, from Source, path *field.Path) field.ErrorList {
	r := pref.Requirements
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	if r.Architecture != nil && *r.Architecture != itvalidation.SupportedArchitecture {
		allErrs = append(allErrs, field.Invalid(path.Root().Child("preference", "name"), from.Name,
			fmt.Sprintf("%s requires the %s architecture (spec.requirements.architecture); Hangar's guests are %s",
				from, *r.Architecture, itvalidation.SupportedArchitecture)))
	}
	if r.CPU != nil && r.CPU.Guest > 0 {
		if c := spec.Domain.CPU; c != nil && c.Sockets*max(c.Cores, 1)*max(c.Threads, 1) < r.CPU.Guest {
			allErrs = append(allErrs, field.Invalid(path.Child("domain", "cpu"), c.Sockets*max(c.Cores, 1)*max(c.Threads, 1),
				fmt.Sprintf("%s requires at least %d vCPUs (spec.requirements.cpu.guest)", from, r.CPU.Guest)))
		}
	}
	if r.Memory != nil && r.Memory.Guest.Sign() > 0 {
		if m := spec.Domain.Memory; m != nil && m.Guest != nil && m.Guest.Cmp(r.Memory.Guest) < 0 {
			allErrs = append(allErrs, field.Invalid(path.Child("domain", "memory", "guest"), m.Guest.String(),
				fmt.Sprintf("%s requires at least %s of memory (spec.requirements.memory.guest)", from, r.Memory.Guest.String())))
		}
	}
	return allErrs
}

func copyMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// addMissing adds the entries of from that into lacks.
func addMissing(into, from map[string]string) map[string]string {
	for k, v := range from {
		if into == nil {
			into = map[string]string{}
		}
		if _, ok := into[k]; !ok {
			into[k] = v
		}
	}
	return into
}
