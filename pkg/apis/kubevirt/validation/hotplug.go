package validation

import (
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// Hotplugged says whether a volume is hotplugged: a claim or DataVolume marked hotpluggable,
// or a memory dump's claim.
func Hotplugged(v *kubevirt.Volume) bool {
	return (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable) ||
		(v.DataVolume != nil && v.DataVolume.Hotpluggable) || v.MemoryDump != nil
}

// ValidateVirtualMachineInstanceHotplugUpdate validates an update of an instance by the
// addvolume and removevolume actions: besides what any update may change, only hotplugged
// volumes and their disks come and go, and the instance stays valid.
func ValidateVirtualMachineInstanceHotplugUpdate(vmi, old *kubevirt.VirtualMachineInstance) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&vmi.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	hot := sets.New[string]()
	for _, spec := range []*kubevirt.VirtualMachineInstanceSpec{&vmi.Spec, &old.Spec} {
		for i := range spec.Volumes {
			if Hotplugged(&spec.Volumes[i]) {
				hot.Insert(spec.Volumes[i].Name)
			}
		}
	}
	cold := func(spec *kubevirt.VirtualMachineInstanceSpec) *kubevirt.VirtualMachineInstanceSpec {
		c := spec.DeepCopy()
		c.Volumes = slices.DeleteFunc(c.Volumes, func(v kubevirt.Volume) bool { return hot.Has(v.Name) })
		c.Domain.Devices.Disks = slices.DeleteFunc(c.Domain.Devices.Disks, func(d kubevirt.Disk) bool { return hot.Has(d.Name) })
		c.TerminationGracePeriodSeconds = nil
		return c
	}
	if !apiequality.Semantic.DeepEqual(cold(&vmi.Spec), cold(&old.Spec)) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "only hotplugged volumes and their disks may change"))
	}
	for i := range old.Spec.Volumes {
		v := &old.Spec.Volumes[i]
		for j := range vmi.Spec.Volumes {
			if n := &vmi.Spec.Volumes[j]; n.Name == v.Name && hot.Has(v.Name) && !apiequality.Semantic.DeepEqual(n, v) {
				allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "volumes").Index(j), "a hotplugged volume does not change: remove it and add it again"))
			}
		}
	}
	return append(allErrs, validateVirtualMachineInstance(vmi)...)
}
