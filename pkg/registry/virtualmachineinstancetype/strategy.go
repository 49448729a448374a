// Package virtualmachineinstancetype is the registry of instance types: the
// VirtualMachineInstancetypes of a namespace and the VirtualMachineClusterInstancetypes every
// namespace can use. The two kinds share their spec, validation and printing and differ only
// in scope, so one package serves both, as KubeVirt's instancetype package handles both.
package virtualmachineinstancetype

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

// itStrategy implements the writes of one of the two kinds; namespaced tells which.
type itStrategy struct {
	namespaced.Strategy
	namespaced bool
}

// NewStrategy returns the strategy of VirtualMachineInstancetypes (namespaced) or of
// VirtualMachineClusterInstancetypes.
func NewStrategy(typer runtime.ObjectTyper, namespaceScoped bool) itStrategy {
	return itStrategy{namespaced.NewStrategy(typer), namespaceScoped}
}

// NamespaceScoped is false for the cluster-wide kind.
func (s itStrategy) NamespaceScoped() bool { return s.namespaced }

// parts returns an object's metadata and spec, whichever of the two kinds it is.
func parts(obj runtime.Object) (*metav1.ObjectMeta, *instancetype.VirtualMachineInstancetypeSpec, error) {
	switch it := obj.(type) {
	case *instancetype.VirtualMachineInstancetype:
		return &it.ObjectMeta, &it.Spec, nil
	case *instancetype.VirtualMachineClusterInstancetype:
		return &it.ObjectMeta, &it.Spec, nil
	}
	return nil, nil, fmt.Errorf("not an instance type: %T", obj)
}

func mustParts(obj runtime.Object) (*metav1.ObjectMeta, *instancetype.VirtualMachineInstancetypeSpec) {
	meta, spec, err := parts(obj)
	if err != nil {
		panic(err)
	}
	return meta, spec
}

func (itStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	meta, _ := mustParts(obj)
	meta.Generation = 1
}

func (itStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	meta, spec := mustParts(obj)
	oldMeta, oldSpec := mustParts(old)
	meta.Generation = oldMeta.Generation
	if !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		meta.Generation++
	}
}

func (s itStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	meta, spec := mustParts(obj)
	allErrs := validation.ValidateObjectMeta(meta, s.namespaced)
	return append(allErrs, validation.ValidateInstancetypeSpec(spec, field.NewPath("spec"))...)
}

func (itStrategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	_, spec := mustParts(obj)
	return validation.InstancetypeWarnings(spec)
}

func (itStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	meta, spec := mustParts(obj)
	oldMeta, _ := mustParts(old)
	allErrs := validation.ValidateObjectMetaUpdate(meta, oldMeta)
	return append(allErrs, validation.ValidateInstancetypeSpec(spec, field.NewPath("spec"))...)
}

func (itStrategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	_, spec := mustParts(obj)
	return validation.InstancetypeWarnings(spec)
}

// GetAttrs returns the labels and fields an instance type can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	meta, _, err := parts(obj)
	if err != nil {
		return nil, nil, err
	}
	_, namespacedKind := obj.(*instancetype.VirtualMachineInstancetype)
	return meta.Labels, generic.ObjectMetaFieldsSet(meta, namespacedKind), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
