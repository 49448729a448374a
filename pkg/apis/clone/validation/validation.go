// Package validation checks clone.kubevirt.io objects (internal version) and reports every
// problem as a field.Error with its full path, so a bad clone is a 422 naming its fields.
package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/clone"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/snapshot"
)

// sourceGroups is the API group each kind a clone can start from belongs to.
var sourceGroups = map[string]string{
	"VirtualMachine":         kubevirt.GroupName,
	"VirtualMachineSnapshot": snapshot.GroupName,
}

// ValidateVirtualMachineClone checks a clone on create.
func ValidateVirtualMachineClone(c *clone.VirtualMachineClone) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	if c.Spec.Source == nil {
		allErrs = append(allErrs, field.Required(spec.Child("source"), "the VirtualMachine or VirtualMachineSnapshot to clone"))
	} else {
		allErrs = append(allErrs, validateReference(c.Spec.Source, spec.Child("source"), sourceGroups)...)
	}
	if c.Spec.Target != nil {
		allErrs = append(allErrs, validateReference(c.Spec.Target, spec.Child("target"),
			map[string]string{"VirtualMachine": kubevirt.GroupName})...)
		// A clone makes a new VM: a VM cannot be cloned onto itself (KubeVirt's webhook).
		if s := c.Spec.Source; s != nil && s.Kind == "VirtualMachine" && c.Spec.Target.Kind == "VirtualMachine" && s.Name == c.Spec.Target.Name {
			allErrs = append(allErrs, field.Invalid(spec.Child("target", "name"), c.Spec.Target.Name,
				"must not be the source's name: a clone makes a new VirtualMachine"))
		}
	}
	allErrs = append(allErrs, validateFilters(c.Spec.LabelFilters, spec.Child("labelFilters"))...)
	allErrs = append(allErrs, validateFilters(c.Spec.AnnotationFilters, spec.Child("annotationFilters"))...)
	template := spec.Child("template")
	allErrs = append(allErrs, validateFilters(c.Spec.Template.LabelFilters, template.Child("labelFilters"))...)
	allErrs = append(allErrs, validateFilters(c.Spec.Template.AnnotationFilters, template.Child("annotationFilters"))...)
	allErrs = append(allErrs, validateMACs(c.Spec.NewMacAddresses, spec.Child("newMacAddresses"))...)
	for i, p := range c.Spec.Patches {
		allErrs = append(allErrs, validatePatch(p, spec.Child("patches").Index(i))...)
	}
	return allErrs
}

// ValidateVirtualMachineCloneUpdate keeps the clone's spec as it was created: the controller
// acts on it once, as KubeVirt's webhook keeps it.
func ValidateVirtualMachineCloneUpdate(c, old *clone.VirtualMachineClone) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(c, old)
	if !apiequality.Semantic.DeepEqual(c.Spec, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation"))
	}
	return allErrs
}

// ValidateObjectMetaUpdate checks an update's metadata, for the status subresource too.
func ValidateObjectMetaUpdate(c, old *clone.VirtualMachineClone) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
}

// validateReference checks that ref names an object of one of groups' kinds, in that kind's
// group, by a DNS subdomain name.
func validateReference(ref *corev1.TypedLocalObjectReference, path *field.Path, groups map[string]string) field.ErrorList {
	var allErrs field.ErrorList
	if group, ok := groups[ref.Kind]; !ok {
		kinds := make([]string, 0, len(groups))
		for k := range groups {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		allErrs = append(allErrs, field.NotSupported(path.Child("kind"), ref.Kind, kinds))
	} else if ref.APIGroup == nil || *ref.APIGroup != group {
		var got interface{} = "<unset>"
		if ref.APIGroup != nil {
			got = *ref.APIGroup
		}
		allErrs = append(allErrs, field.Invalid(path.Child("apiGroup"), got, fmt.Sprintf("must be %s for a %s", group, ref.Kind)))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(path.Child("name"), ""))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(path.Child("name"), ref.Name, msg))
		}
	}
	return allErrs
}

// validateFilters refuses empty filters, which would match nothing and are most likely a
// mistake in the manifest, and what KubeVirt's webhook refuses: "!" alone, a "!" anywhere but
// first, a "*" anywhere but last.
func validateFilters(filters []string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, f := range filters {
		switch {
		case strings.TrimSpace(f) == "":
			allErrs = append(allErrs, field.Required(path.Index(i), "a filter must not be empty"))
		case f == "!":
			allErrs = append(allErrs, field.Invalid(path.Index(i), f, "a negation alone is not a filter"))
		case strings.Contains(f[1:], "!"):
			allErrs = append(allErrs, field.Invalid(path.Index(i), f, "a negation (!) may only begin a filter"))
		case strings.Contains(f[:len(f)-1], "*"):
			allErrs = append(allErrs, field.Invalid(path.Index(i), f, "a wildcard (*) may only end a filter"))
		}
	}
	return allErrs
}

// validateMACs checks that each new MAC is a unicast MAC address: a multicast one would not
// work as an interface's address. An empty one is KubeVirt's "no MAC": one is made.
func validateMACs(macs map[string]string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := make([]string, 0, len(macs))
	for name := range macs {
		names = append(names, name)
	}
	sort.Strings(names) // the errors in a stable order
	for _, name := range names {
		mac := macs[name]
		if name == "" {
			allErrs = append(allErrs, field.Invalid(path, name, "an interface name must not be empty"))
			continue
		}
		if mac == "" {
			continue
		}
		hw, err := net.ParseMAC(mac)
		switch {
		case err != nil:
			allErrs = append(allErrs, field.Invalid(path.Key(name), mac, err.Error()))
		case len(hw) != 6:
			allErrs = append(allErrs, field.Invalid(path.Key(name), mac, "must be a 48-bit MAC address"))
		case hw[0]&1 == 1:
			allErrs = append(allErrs, field.Invalid(path.Key(name), mac, "must be a unicast MAC address"))
		}
	}
	return allErrs
}

// supportedPatchOps are the JSON patch (RFC 6902) operations.
var supportedPatchOps = sets.New("add", "remove", "replace", "copy", "move", "test")

// jsonPatchOperation is one operation of a JSON patch.
type jsonPatchOperation struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// validatePatch checks one of spec.patches: a JSON patch, an array of operations, or one
// operation alone (what KubeVirt's own tools write), on the target VirtualMachine.
func validatePatch(patch string, path *field.Path) field.ErrorList {
	trimmed := bytes.TrimSpace([]byte(patch))
	if len(trimmed) == 0 || trimmed[0] != '[' {
		var op jsonPatchOperation
		if err := json.Unmarshal(trimmed, &op); err != nil {
			return field.ErrorList{field.Invalid(path, patch, fmt.Sprintf("not a JSON patch: %v", err))}
		}
		return validatePatchOperation(op, path)
	}
	var ops []jsonPatchOperation
	if err := json.Unmarshal(trimmed, &ops); err != nil {
		return field.ErrorList{field.Invalid(path, patch, fmt.Sprintf("not a JSON patch: %v", err))}
	}
	if len(ops) == 0 {
		return field.ErrorList{field.Invalid(path, patch, "a JSON patch must have an operation")}
	}
	var allErrs field.ErrorList
	for i, op := range ops {
		allErrs = append(allErrs, validatePatchOperation(op, path.Index(i))...)
	}
	return allErrs
}

func validatePatchOperation(op jsonPatchOperation, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !supportedPatchOps.Has(op.Op) {
		allErrs = append(allErrs, field.NotSupported(path.Child("op"), op.Op, sets.List(supportedPatchOps)))
	}
	if !strings.HasPrefix(op.Path, "/") {
		allErrs = append(allErrs, field.Invalid(path.Child("path"), op.Path, "must be a JSON pointer starting with /"))
	}
	return allErrs
}
