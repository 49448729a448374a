package virtualmachine

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/instancetype/expand"
)

// The kinds a VM may name, as KubeVirt spells them (it accepts the lower-case forms too).
const (
	KindInstancetype        = "VirtualMachineInstancetype"
	KindClusterInstancetype = "VirtualMachineClusterInstancetype"
	KindPreference          = "VirtualMachinePreference"
	KindClusterPreference   = "VirtualMachineClusterPreference"
)

// RevisionGetter reads a ControllerRevision of a namespace: the pinned version of an instance
// type or preference a VM uses.
type RevisionGetter func(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error)

// Instancetypes is where VMs' instance types and preferences are read: the four kinds from
// virt-api's own storage, the revisions from kube-apiserver.
type Instancetypes struct {
	Instancetypes, ClusterInstancetypes, Preferences, ClusterPreferences rest.Getter
	// Revisions reads ControllerRevisions; nil standalone, where a VM cannot name a revision.
	Revisions RevisionGetter
	// Decoder decodes a revision's object (instancetype.kubevirt.io, any version) to the
	// internal version.
	Decoder runtime.Decoder
}

// expander expands VM templates with the instance type and preference they name.
type expander struct {
	scheme *runtime.Scheme
	from   *Instancetypes
}

// normalizeKind returns KubeVirt's kind for a matcher's kind: the cluster-wide kind when
// empty, the CamelCase one for the lower-case spelling; ok is false for anything else.
func normalizeKind(kind, namespaced, cluster string) (string, bool) {
	switch strings.ToLower(kind) {
	case "", strings.ToLower(cluster):
		return cluster, true
	case strings.ToLower(namespaced):
		return namespaced, true
	}
	return kind, false
}

// resolved is an instance type's or preference's spec and where it came from.
type resolved struct {
	source expand.Source
	object runtime.Object
}

// resolve finds what a matcher names: the revision when one is named (by the matcher, or by
// the status when the VM has used it already), the object otherwise.
func (e *expander) resolve(ctx context.Context, vm *kubevirt.VirtualMachine, path *field.Path, kind, name, revision,
	inferFromVolume string, namespaced, cluster string, namespacedGetter, clusterGetter rest.Getter) (*resolved, *field.Error) {
	normalized, ok := normalizeKind(kind, namespaced, cluster)
	if !ok {
		return nil, field.NotSupported(path.Child("kind"), kind, []string{namespaced, cluster})
	}
	switch {
	case inferFromVolume != "":
		// Resolved when the VM is written (infer.go): only a VM that was not written gets here.
		return nil, field.Forbidden(path.Child("inferFromVolume"), "is resolved when the VirtualMachine is written; this one was not")
	case name == "":
		return nil, field.Required(path.Child("name"), "")
	}
	source := expand.Source{Kind: normalized, Name: name}
	if revision != "" {
		if e.from == nil || e.from.Revisions == nil {
			return nil, field.Invalid(path.Child("revisionName"), revision, "revisions are kept in the cluster's ControllerRevisions, which this virt-api cannot read")
		}
		cr, err := e.from.Revisions(ctx, vm.Namespace, revision)
		if apierrors.IsNotFound(err) {
			return nil, field.NotFound(path.Child("revisionName"), revision)
		} else if err != nil {
			return nil, field.InternalError(path.Child("revisionName"), fmt.Errorf("read ControllerRevision %s/%s: %w", vm.Namespace, revision, err))
		}
		obj, err := runtime.Decode(e.from.Decoder, cr.Data.Raw)
		if err != nil {
			return nil, field.Invalid(path.Child("revisionName"), revision, fmt.Sprintf("not a revision of an instance type or preference: %v", err))
		}
		return &resolved{source: source, object: obj}, nil
	}
	if e.from == nil {
		return nil, field.Invalid(path.Child("name"), name, "instance types and preferences are not served here")
	}
	getter := clusterGetter
	if normalized == namespaced {
		getter = namespacedGetter
		ctx = genericapirequest.WithNamespace(ctx, vm.Namespace)
	} else {
		ctx = genericapirequest.WithNamespace(ctx, metav1.NamespaceNone)
	}
	obj, err := getter.Get(ctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, field.NotFound(path.Child("name"), name)
	} else if err != nil {
		return nil, field.InternalError(path.Child("name"), fmt.Errorf("read %s %s: %w", normalized, name, err))
	}
	return &resolved{source: source, object: obj}, nil
}

// usedRevision is the revision a VM uses: the one the user named, else the one the
// controller recorded for the same instance type or preference.
func usedRevision(named string, status *kubevirt.InstancetypeStatusRef, kind, name string) string {
	if named != "" {
		return named
	}
	if status != nil && status.ControllerRevisionRef != nil && status.Name == name && status.Kind == kind {
		return status.ControllerRevisionRef.Name
	}
	return ""
}

// ExpandedTemplate returns a copy of the VM's template with its instance type and preference
// applied and defaulted as an instance is; a VM that names neither gets its own template. The
// errors are the VM's: unknown kinds, missing objects, conflicts, unmet requirements.
func (e *expander) ExpandedTemplate(ctx context.Context, vm *kubevirt.VirtualMachine) (*kubevirt.VirtualMachineInstanceTemplateSpec, field.ErrorList) {
	if vm.Spec.Template == nil {
		return nil, nil
	}
	tmpl := vm.Spec.Template.DeepCopy()
	if vm.Spec.Instancetype == nil && vm.Spec.Preference == nil {
		return tmpl, nil
	}
	specPath := field.NewPath("spec")
	var allErrs field.ErrorList
	var itSpec *instancetype.VirtualMachineInstancetypeSpec
	var prefSpec *instancetype.VirtualMachinePreferenceSpec
	var itFrom, prefFrom expand.Source
	if m := vm.Spec.Instancetype; m != nil {
		kind, _ := normalizeKind(m.Kind, KindInstancetype, KindClusterInstancetype)
		var getters [2]rest.Getter
		if e.from != nil {
			getters = [2]rest.Getter{e.from.Instancetypes, e.from.ClusterInstancetypes}
		}
		r, err := e.resolve(ctx, vm, specPath.Child("instancetype"), m.Kind, m.Name,
			usedRevision(m.RevisionName, vm.Status.InstancetypeRef, kind, m.Name), m.InferFromVolume,
			KindInstancetype, KindClusterInstancetype, getters[0], getters[1])
		if err != nil {
			allErrs = append(allErrs, err)
		} else if itSpec = instancetypeSpecOf(r.object); itSpec == nil {
			allErrs = append(allErrs, field.Invalid(specPath.Child("instancetype"), m.Name, fmt.Sprintf("the revision holds a %T, not an instance type", r.object)))
		} else {
			itFrom = r.source
		}
	}
	if m := vm.Spec.Preference; m != nil {
		kind, _ := normalizeKind(m.Kind, KindPreference, KindClusterPreference)
		var getters [2]rest.Getter
		if e.from != nil {
			getters = [2]rest.Getter{e.from.Preferences, e.from.ClusterPreferences}
		}
		r, err := e.resolve(ctx, vm, specPath.Child("preference"), m.Kind, m.Name,
			usedRevision(m.RevisionName, vm.Status.PreferenceRef, kind, m.Name), m.InferFromVolume,
			KindPreference, KindClusterPreference, getters[0], getters[1])
		if err != nil {
			allErrs = append(allErrs, err)
		} else if prefSpec = preferenceSpecOf(r.object); prefSpec == nil {
			allErrs = append(allErrs, field.Invalid(specPath.Child("preference"), m.Name, fmt.Sprintf("the revision holds a %T, not a preference", r.object)))
		} else {
			prefFrom = r.source
		}
	}
	if len(allErrs) > 0 {
		return nil, allErrs
	}
	if errs := expand.Template(tmpl, itSpec, itFrom, prefSpec, prefFrom, specPath); len(errs) > 0 {
		return nil, errs
	}
	defaulted, err := e.defaulted(tmpl)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(specPath.Child("template"), err)}
	}
	return defaulted, nil
}

// defaulted applies kubevirt.io/v1's instance defaults to an internal template.
func (e *expander) defaulted(tmpl *kubevirt.VirtualMachineInstanceTemplateSpec) (*kubevirt.VirtualMachineInstanceTemplateSpec, error) {
	var external v1.VirtualMachineInstanceTemplateSpec
	if err := e.scheme.Convert(tmpl, &external, nil); err != nil {
		return nil, err
	}
	v1.DefaultVirtualMachineInstanceSpec(&external.Spec)
	out := &kubevirt.VirtualMachineInstanceTemplateSpec{}
	if err := e.scheme.Convert(&external, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

func instancetypeSpecOf(obj runtime.Object) *instancetype.VirtualMachineInstancetypeSpec {
	switch it := obj.(type) {
	case *instancetype.VirtualMachineInstancetype:
		return &it.Spec
	case *instancetype.VirtualMachineClusterInstancetype:
		return &it.Spec
	}
	return nil
}

func preferenceSpecOf(obj runtime.Object) *instancetype.VirtualMachinePreferenceSpec {
	switch p := obj.(type) {
	case *instancetype.VirtualMachinePreference:
		return &p.Spec
	case *instancetype.VirtualMachineClusterPreference:
		return &p.Spec
	}
	return nil
}

// validateExpanded validates a VM as its instance will be: with the template expanded.
func (e *expander) validateExpanded(ctx context.Context, vm *kubevirt.VirtualMachine, validate func(*kubevirt.VirtualMachine) field.ErrorList) field.ErrorList {
	tmpl, errs := e.ExpandedTemplate(ctx, vm)
	if len(errs) > 0 {
		return errs
	}
	expanded := *vm
	expanded.Spec.Template = tmpl
	return validate(&expanded)
}
