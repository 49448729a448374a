// Package virtualmachinepreference is the registry of preferences: the
// VirtualMachinePreferences of a namespace and the VirtualMachineClusterPreferences every
// namespace can use. The two kinds share their spec, validation and printing and differ only
// in scope, so one package serves both.
package virtualmachinepreference

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	"github.com/hangarvm/hangar/pkg/apis/instancetype/validation"
	"github.com/hangarvm/hangar/pkg/registry/namespaced"
)

// prefStrategy implements the writes of one of the two kinds; namespaced tells which.
type prefStrategy struct {
	namespaced.Strategy
	namespaced bool
}

// NewStrategy returns the strategy of VirtualMachinePreferences (namespaced) or of
// VirtualMachineClusterPreferences.
func NewStrategy(typer runtime.ObjectTyper, namespaceScoped bool) prefStrategy {
	return prefStrategy{namespaced.NewStrategy(typer), namespaceScoped}
}

// NamespaceScoped is false for the cluster-wide kind.
func (s prefStrategy) NamespaceScoped() bool { return s.namespaced }

// parts returns an object's metadata and spec, whichever of the two kinds it is.
func parts(obj runtime.Object) (*metav1.ObjectMeta, *instancetype.VirtualMachinePreferenceSpec, error) {
	switch it := obj.(type) {
	case *instancetype.VirtualMachinePreference:
		return &it.ObjectMeta, &it.Spec, nil
	case *instancetype.VirtualMachineClusterPreference:
		return &it.ObjectMeta, &it.Spec, nil
	}
	return nil, nil, fmt.Errorf("not a preference: %T", obj)
}

func mustParts(obj runtime.Object) (*metav1.ObjectMeta, *instancetype.VirtualMachinePreferenceSpec) {
	meta, spec, err := parts(obj)
	if err != nil {
		panic(err)
	}
	return meta, spec
}

func (prefStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	meta, _ := mustParts(obj)
	meta.Generation = 1
}

func (prefStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	meta, spec := mustParts(obj)
	oldMeta, oldSpec := mustParts(old)
	meta.Generation = oldMeta.Generation
	if !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		meta.Generation++
	}
}

func (s prefStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	meta, spec := mustParts(obj)
	allErrs := validation.ValidateObjectMeta(meta, s.namespaced)
	return append(allErrs, validation.ValidatePreferenceSpec(spec, field.NewPath("spec"))...)
}

func (prefStrategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	_, spec := mustParts(obj)
	return validation.PreferenceWarnings(spec)
}

func (prefStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	meta, spec := mustParts(obj)
	oldMeta, _ := mustParts(old)
	allErrs := validation.ValidateObjectMetaUpdate(meta, oldMeta)
	return append(allErrs, validation.ValidatePreferenceSpec(spec, field.NewPath("spec"))...)
}

func (prefStrategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	_, spec := mustParts(obj)
	return validation.PreferenceWarnings(spec)
}

// GetAttrs returns the labels and fields a preference can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	meta, _, err := parts(obj)
	if err != nil {
		return nil, nil, err
	}
	_, namespacedKind := obj.(*instancetype.VirtualMachinePreference)
	return meta.Labels, generic.ObjectMetaFieldsSet(meta, namespacedKind), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
