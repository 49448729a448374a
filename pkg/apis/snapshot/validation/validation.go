// Package validation checks snapshot.kubevirt.io objects (internal version) and reports every
// problem as a field.Error with its full path. It refuses what KubeVirt's admission webhooks
// refuse: a source or target that is not a kubevirt.io VirtualMachine, a spec changed after
// creation, and a restore without a snapshot to restore.
package validation

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/snapshot"
)

// ValidateObjectMeta checks an object's metadata on create: names are DNS subdomains, as
// KubeVirt's custom resources take them.
func ValidateObjectMeta(meta *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(meta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

// ValidateObjectMetaUpdate checks an update's metadata.
func ValidateObjectMetaUpdate(meta, old *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(meta, old, field.NewPath("metadata"))
}

// validateVMReference checks that ref names a kubevirt.io VirtualMachine.
func validateVMReference(ref *corev1.TypedLocalObjectReference, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.APIGroup == nil || *ref.APIGroup != kubevirt.GroupName {
		var got interface{} = "<unset>"
		if ref.APIGroup != nil {
			got = *ref.APIGroup
		}
		allErrs = append(allErrs, field.Invalid(path.Child("apiGroup"), got, "must be "+kubevirt.GroupName))
	}
	if ref.Kind != "VirtualMachine" {
		allErrs = append(allErrs, field.NotSupported(path.Child("kind"), ref.Kind, []string{"VirtualMachine"}))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(path.Child("name"), "the VirtualMachine's name"))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(path.Child("name"), ref.Name, msg))
		}
	}
	return allErrs
}

var deletionPolicies = sets.New(snapshot.DeletionPolicyDelete, snapshot.DeletionPolicyRetain)

// ValidateVirtualMachineSnapshot checks a snapshot on create.
func ValidateVirtualMachineSnapshot(s *snapshot.VirtualMachineSnapshot) field.ErrorList {
	allErrs := ValidateObjectMeta(&s.ObjectMeta)
	spec := field.NewPath("spec")
	allErrs = append(allErrs, validateVMReference(&s.Spec.Source, spec.Child("source"))...)
	if p := s.Spec.DeletionPolicy; p != nil && !deletionPolicies.Has(*p) {
		allErrs = append(allErrs, field.NotSupported(spec.Child("deletionPolicy"), *p, sets.List(deletionPolicies)))
	}
	if d := s.Spec.FailureDeadline; d != nil && d.Duration < 0 {
		allErrs = append(allErrs, field.Invalid(spec.Child("failureDeadline"), d.Duration.String(), "must not be negative"))
	}
	return allErrs
}

// ValidateVirtualMachineSnapshotUpdate checks a snapshot's update: the spec is fixed at
// creation, as KubeVirt's webhook keeps it.
func ValidateVirtualMachineSnapshotUpdate(s, old *snapshot.VirtualMachineSnapshot) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	if !apiequality.Semantic.DeepEqual(s.Spec, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation"))
	}
	return allErrs
}

// ValidateVirtualMachineSnapshotContent checks a content on create: it keeps a VirtualMachine
// and names each VolumeSnapshot of a volume.
func ValidateVirtualMachineSnapshotContent(c *snapshot.VirtualMachineSnapshotContent) field.ErrorList {
	allErrs := ValidateObjectMeta(&c.ObjectMeta)
	spec := field.NewPath("spec")
	if c.Spec.Source.VirtualMachine == nil {
		allErrs = append(allErrs, field.Required(spec.Child("source", "virtualMachine"), "the VirtualMachine snapshotted"))
	}
	if n := c.Spec.VirtualMachineSnapshotName; n == nil || *n == "" {
		allErrs = append(allErrs, field.Required(spec.Child("virtualMachineSnapshotName"), "the snapshot the content belongs to"))
	}
	volumes := sets.New[string]()
	for i, b := range c.Spec.VolumeBackups {
		path := spec.Child("volumeBackups").Index(i)
		switch {
		case b.VolumeName == "":
			allErrs = append(allErrs, field.Required(path.Child("volumeName"), ""))
		case volumes.Has(b.VolumeName):
			allErrs = append(allErrs, field.Duplicate(path.Child("volumeName"), b.VolumeName))
		}
		volumes.Insert(b.VolumeName)
		if b.PersistentVolumeClaim.Name == "" {
			allErrs = append(allErrs, field.Required(path.Child("persistentVolumeClaim", "metadata", "name"), "the claim backed up"))
		}
		if b.VolumeSnapshotName == nil || *b.VolumeSnapshotName == "" {
			allErrs = append(allErrs, field.Required(path.Child("volumeSnapshotName"), "the VolumeSnapshot of the claim"))
		}
	}
	return allErrs
}

// ValidateVirtualMachineSnapshotContentUpdate keeps the content's spec as it was created.
func ValidateVirtualMachineSnapshotContentUpdate(c, old *snapshot.VirtualMachineSnapshotContent) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)
	if !apiequality.Semantic.DeepEqual(c.Spec, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation"))
	}
	return allErrs
}

var readinessPolicies = sets.New(snapshot.TargetReadinessStopTarget, snapshot.TargetReadinessWaitGracePeriod,
	snapshot.TargetReadinessFailImmediate, snapshot.TargetReadinessWaitEventually)

// supportedPatchOps are the JSON patch operations a restore may apply to a new VM.
var supportedPatchOps = sets.New("add", "remove", "replace", "copy", "move", "test")

// ValidateVirtualMachineRestore checks a restore on create.
func ValidateVirtualMachineRestore(r *snapshot.VirtualMachineRestore) field.ErrorList {
	allErrs := ValidateObjectMeta(&r.ObjectMeta)
	spec := field.NewPath("spec")
	allErrs = append(allErrs, validateVMReference(&r.Spec.Target, spec.Child("target"))...)
	if r.Spec.VirtualMachineSnapshotName == "" {
		allErrs = append(allErrs, field.Required(spec.Child("virtualMachineSnapshotName"), "the snapshot to restore"))
	}
	if p := r.Spec.TargetReadinessPolicy; p != nil && !readinessPolicies.Has(*p) {
		allErrs = append(allErrs, field.NotSupported(spec.Child("targetReadinessPolicy"), *p, sets.List(readinessPolicies)))
	}
	if p := r.Spec.VolumeRestorePolicy; p != nil {
		switch *p {
		case snapshot.VolumeRestorePolicyRandomizeNames:
		case snapshot.VolumeRestorePolicyInPlace:
			allErrs = append(allErrs, field.Invalid(spec.Child("volumeRestorePolicy"), *p,
				"not supported by Hangar: a restore makes new claims and leaves the old ones in place"))
		default:
			allErrs = append(allErrs, field.NotSupported(spec.Child("volumeRestorePolicy"), *p,
				[]string{string(snapshot.VolumeRestorePolicyRandomizeNames)}))
		}
	}
	overridden := sets.New[string]()
	for i, o := range r.Spec.VolumeRestoreOverrides {
		path := spec.Child("volumeRestoreOverrides").Index(i)
		if o.VolumeName == "" {
			allErrs = append(allErrs, field.Required(path.Child("volumeName"), ""))
		} else if overridden.Has(o.VolumeName) {
			allErrs = append(allErrs, field.Duplicate(path.Child("volumeName"), o.VolumeName))
		}
		overridden.Insert(o.VolumeName)
		if o.RestoreName != "" {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(o.RestoreName, false) {
				allErrs = append(allErrs, field.Invalid(path.Child("restoreName"), o.RestoreName, msg))
			}
		}
	}
	for i, p := range r.Spec.Patches {
		allErrs = append(allErrs, validatePatch(p, spec.Child("patches").Index(i))...)
	}
	return allErrs
}

// jsonPatchOperation is one operation of a JSON patch (RFC 6902).
type jsonPatchOperation struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// validatePatch checks one of spec.patches: a JSON patch operation on the new VM. As
// KubeVirt's webhook, it refuses patches of the VM's status.
func validatePatch(patch string, path *field.Path) field.ErrorList {
	var op jsonPatchOperation
	if err := json.Unmarshal([]byte(patch), &op); err != nil {
		return field.ErrorList{field.Invalid(path, patch, fmt.Sprintf("not a JSON patch operation: %v", err))}
	}
	if !supportedPatchOps.Has(op.Op) {
		return field.ErrorList{field.NotSupported(path.Child("op"), op.Op, sets.List(supportedPatchOps))}
	}
	if !strings.HasPrefix(op.Path, "/") {
		return field.ErrorList{field.Invalid(path.Child("path"), op.Path, "must be a JSON pointer starting with /")}
	}
	if op.Path == "/status" || strings.HasPrefix(op.Path, "/status/") {
		return field.ErrorList{field.Forbidden(path.Child("path"), "a restore may not patch the VirtualMachine's status")}
	}
	return nil
}

// ValidateVirtualMachineRestoreUpdate keeps the restore's spec as it was created.
func ValidateVirtualMachineRestoreUpdate(r, old *snapshot.VirtualMachineRestore) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta)
	if !apiequality.Semantic.DeepEqual(r.Spec, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation"))
	}
	return allErrs
}
