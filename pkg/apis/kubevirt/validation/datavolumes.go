package validation

import (
	"fmt"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// validateDataVolumeTemplates checks a VM's DataVolume templates as KubeVirt's admission does:
// each has a name (unique among them), lives in the VM's namespace, says what claim to make
// (pvc or storage, not both) and where the data comes from (source or sourceRef, not both,
// unless the claim is populated from its own dataSourceRef), and is used by a dataVolume
// volume of the template: a DataVolume no volume names would be made and never used. That a
// dataVolume volume naming no template names an existing DataVolume, and that the cluster
// serves CDI at all, is virt-api's registry's check (it needs the cluster).
func validateDataVolumeTemplates(vm *kubevirt.VirtualMachine, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	used := sets.New[string]()
	if vm.Spec.Template != nil {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.DataVolume != nil {
				used.Insert(v.DataVolume.Name)
			}
		}
	}
	names := sets.New[string]()
	for i := range vm.Spec.DataVolumeTemplates {
		dvt := &vm.Spec.DataVolumeTemplates[i]
		idx := path.Index(i)
		meta := idx.Child("metadata")
		switch {
		case dvt.Name == "":
			allErrs = append(allErrs, field.Required(meta.Child("name"), "a DataVolume template needs a name"))
		case names.Has(dvt.Name):
			allErrs = append(allErrs, field.Duplicate(meta.Child("name"), dvt.Name))
		default:
			names.Insert(dvt.Name)
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(dvt.Name, false) {
				allErrs = append(allErrs, field.Invalid(meta.Child("name"), dvt.Name, msg))
			}
			if !used.Has(dvt.Name) {
				allErrs = append(allErrs, field.Invalid(meta.Child("name"), dvt.Name,
					"no dataVolume volume of spec.template.spec.volumes names this DataVolume template"))
			}
		}
		if dvt.Namespace != "" && vm.Namespace != "" && dvt.Namespace != vm.Namespace {
			allErrs = append(allErrs, field.Invalid(meta.Child("namespace"), dvt.Namespace,
				fmt.Sprintf("a DataVolume template is made in the VM's namespace %q", vm.Namespace)))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabels(dvt.Labels, meta.Child("labels"))...)
		allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(dvt.Annotations, meta.Child("annotations"))...)
		allErrs = append(allErrs, validateDataVolumeSpec(&dvt.Spec, idx.Child("spec"))...)
	}
	return allErrs
}

func validateDataVolumeSpec(spec *cdiv1beta1.DataVolumeSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case spec.PVC == nil && spec.Storage == nil:
		allErrs = append(allErrs, field.Required(path.Child("storage"), "a DataVolume needs pvc or storage: the claim it fills"))
	case spec.PVC != nil && spec.Storage != nil:
		allErrs = append(allErrs, field.Invalid(path.Child("pvc"), "pvc and storage", "pvc and storage are mutually exclusive"))
	}
	switch {
	case spec.Source != nil && spec.SourceRef != nil:
		allErrs = append(allErrs, field.Invalid(path.Child("sourceRef"), spec.SourceRef.Name, "source and sourceRef are mutually exclusive"))
	case spec.Source == nil && spec.SourceRef == nil && !populatedByClaim(spec):
		allErrs = append(allErrs, field.Required(path.Child("source"),
			"a DataVolume needs source or sourceRef (or a claim populated from its dataSourceRef)"))
	}
	if s := spec.Source; s != nil {
		if n := countSources(s); n != 1 {
			allErrs = append(allErrs, field.Invalid(path.Child("source"), n,
				"must have exactly one source (http, s3, gcs, registry, pvc, upload, blank, imageio, vddk, snapshot)"))
		}
	}
	if r := spec.SourceRef; r != nil {
		refPath := path.Child("sourceRef")
		if r.Kind != cdiv1beta1.DataSourceKind {
			allErrs = append(allErrs, field.NotSupported(refPath.Child("kind"), r.Kind, []string{cdiv1beta1.DataSourceKind}))
		}
		if r.Name == "" {
			allErrs = append(allErrs, field.Required(refPath.Child("name"), ""))
		}
	}
	return allErrs
}

// populatedByClaim: the claim names its own populator, so the DataVolume has no source.
func populatedByClaim(spec *cdiv1beta1.DataVolumeSpec) bool {
	if spec.PVC != nil && (spec.PVC.DataSourceRef != nil || spec.PVC.DataSource != nil) {
		return true
	}
	return spec.Storage != nil && (spec.Storage.DataSourceRef != nil || spec.Storage.DataSource != nil)
}

func countSources(s *cdiv1beta1.DataVolumeSource) int {
	n := 0
	for _, set := range []bool{s.HTTP != nil, s.S3 != nil, s.GCS != nil, s.Registry != nil, s.PVC != nil,
		s.Upload != nil, s.Blank != nil, s.Imageio != nil, s.VDDK != nil, s.Snapshot != nil} {
		if set {
			n++
		}
	}
	return n
}
