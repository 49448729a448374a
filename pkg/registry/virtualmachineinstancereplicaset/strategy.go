// Package virtualmachineinstancereplicaset is the registry of VirtualMachineInstanceReplicaSets:
// how they are created, updated, validated, stored, scaled and printed.
package virtualmachineinstancereplicaset

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
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation"
	"github.com/hangarvm/hangar/pkg/registry/namespaced"
	"github.com/hangarvm/hangar/pkg/registry/resetfields"
)

// rsStrategy implements the behaviour of replica set writes through the main resource.
type rsStrategy struct {
	namespaced.Strategy
}

// NewStrategy returns the strategy for replica set create, update and delete.
func NewStrategy(typer runtime.ObjectTyper) rsStrategy {
	return rsStrategy{namespaced.NewStrategy(typer)}
}

func (rsStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.For(fieldpath.MakePathOrDie("status"))
}

func (rsStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	rs := obj.(*kubevirt.VirtualMachineInstanceReplicaSet)
	rs.Status = kubevirt.VirtualMachineInstanceReplicaSetStatus{}
	rs.Generation = 1
}

func (rsStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	rs, oldRS := obj.(*kubevirt.VirtualMachineInstanceReplicaSet), old.(*kubevirt.VirtualMachineInstanceReplicaSet)
	rs.Status = oldRS.Status
	if !apiequality.Semantic.DeepEqual(rs.Spec, oldRS.Spec) {
		rs.Generation = oldRS.Generation + 1
	}
}

func (rsStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineInstanceReplicaSet(obj.(*kubevirt.VirtualMachineInstanceReplicaSet))
}

func (rsStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (rsStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineInstanceReplicaSetUpdate(obj.(*kubevirt.VirtualMachineInstanceReplicaSet), old.(*kubevirt.VirtualMachineInstanceReplicaSet))
}

func (rsStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// rsStatusStrategy implements writes through the status subresource: only the status changes.
type rsStatusStrategy struct {
	rsStrategy
}

// NewStatusStrategy returns the strategy of the status subresource.
func NewStatusStrategy(base rsStrategy) rsStatusStrategy {
	return rsStatusStrategy{base}
}

func (rsStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.For(fieldpath.MakePathOrDie("spec"))
}

func (rsStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	rs := obj.(*kubevirt.VirtualMachineInstanceReplicaSet)
	rs.Spec = old.(*kubevirt.VirtualMachineInstanceReplicaSet).Spec
	// The selector string is derived, so autoscalers always read the spec's selector.
	if selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector); err == nil {
		rs.Status.LabelSelector = selector.String()
	}
}

func (rsStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineInstanceReplicaSetStatusUpdate(obj.(*kubevirt.VirtualMachineInstanceReplicaSet), old.(*kubevirt.VirtualMachineInstanceReplicaSet))
}

// GetAttrs returns the labels and fields a replica set can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	rs, ok := obj.(*kubevirt.VirtualMachineInstanceReplicaSet)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachineInstanceReplicaSet: %T", obj)
	}
	return rs.Labels, generic.ObjectMetaFieldsSet(&rs.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
