// Package validation checks export.kubevirt.io objects (internal version) and reports every
// problem as a field.Error with its full path, so a bad export is a 422 naming its fields.
package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/export"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// ServicePrefix names the Service in front of an export's server: the prefix and the export's
// name must make a DNS label, so an export's name is one, of at most MaxNameLength characters.
const ServicePrefix = "virt-export-"

// MaxNameLength is the longest export name whose Service name is still a DNS label.
const MaxNameLength = validation.DNS1123LabelMaxLength - len(ServicePrefix)

// sourceGroups is the API group of each kind an export serves. VirtualMachineSnapshots are
// KubeVirt's third kind; Hangar does not export them yet and says so at creation rather
// than leave the export pending.
var sourceGroups = map[string]string{
	"VirtualMachine":        kubevirt.GroupName,
	"PersistentVolumeClaim": "",
}

// ValidateVirtualMachineExport checks an export on create.
func ValidateVirtualMachineExport(e *export.VirtualMachineExport) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&e.ObjectMeta, true, nameIsServiceSuffix, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	source := spec.Child("source")
	src := e.Spec.Source
	group := ""
	if src.APIGroup != nil {
		group = *src.APIGroup
	}
	switch want, ok := sourceGroups[src.Kind]; {
	case src.Kind == "VirtualMachineSnapshot":
		allErrs = append(allErrs, field.Invalid(source.Child("kind"), src.Kind,
			"exports of VirtualMachineSnapshots are not served yet: export a VirtualMachine restored from it"))
	case !ok:
		allErrs = append(allErrs, field.NotSupported(source.Child("kind"), src.Kind, []string{"VirtualMachine", "PersistentVolumeClaim"}))
	case group != want:
		allErrs = append(allErrs, field.Invalid(source.Child("apiGroup"), group, fmt.Sprintf("must be %q for a %s", want, src.Kind)))
	}
	if src.Name == "" {
		allErrs = append(allErrs, field.Required(source.Child("name"), ""))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(src.Name, false) {
			allErrs = append(allErrs, field.Invalid(source.Child("name"), src.Name, msg))
		}
	}
	if ref := e.Spec.TokenSecretRef; ref != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*ref, false) {
			allErrs = append(allErrs, field.Invalid(spec.Child("tokenSecretRef"), *ref, msg))
		}
	}
	if ttl := e.Spec.TTLDuration; ttl != nil && ttl.Duration <= 0 {
		allErrs = append(allErrs, field.Invalid(spec.Child("ttlDuration"), ttl.Duration.String(), "must be positive"))
	}
	return allErrs
}

// nameIsServiceSuffix accepts names that, after ServicePrefix, still make a Service name.
func nameIsServiceSuffix(name string, prefix bool) []string {
	msgs := validation.IsDNS1123Label(name)
	if len(name) > MaxNameLength {
		msgs = append(msgs, fmt.Sprintf("must be no more than %d characters: the export's Service is %s<name>", MaxNameLength, ServicePrefix))
	}
	return msgs
}

// ValidateVirtualMachineExportUpdate keeps the export's spec as it was created, as KubeVirt's
// webhook does: the server was made for it.
func ValidateVirtualMachineExportUpdate(e, old *export.VirtualMachineExport) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(e, old)
	if !apiequality.Semantic.DeepEqual(e.Spec, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation"))
	}
	return allErrs
}

// ValidateObjectMetaUpdate checks an update's metadata, for the status subresource too.
func ValidateObjectMetaUpdate(e, old *export.VirtualMachineExport) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
}
