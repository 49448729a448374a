// Package virtualmachinerestore is the registry of VirtualMachineRestores: a snapshot
// restored to the VirtualMachine it was taken of (stopped) or to a new one. The spec is fixed
// at creation; the status belongs to virt-controller's restore controller.
package virtualmachinerestore

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	"github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/snapshot/validation"
	"github.com/hangarvm/hangar/pkg/registry/namespaced"
	"github.com/hangarvm/hangar/pkg/registry/resetfields"
)

type restoreStrategy struct {
	namespaced.Strategy
}

// NewStrategy returns the strategy for restore create, update and delete.
func NewStrategy(typer runtime.ObjectTyper) restoreStrategy {
	return restoreStrategy{namespaced.NewStrategy(typer)}
}

var servedVersions = []string{v1beta1.SchemeGroupVersion.String()}

func (restoreStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("status"))
}

func (restoreStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s := obj.(*snapshot.VirtualMachineRestore)
	s.Status = nil
	s.Generation = 1
}

func (restoreStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	r, o := obj.(*snapshot.VirtualMachineRestore), old.(*snapshot.VirtualMachineRestore)
	r.Status = o.Status
	keepCreatesTarget(r, o)
}

// keepCreatesTarget keeps what virt-api recorded at creation: no client sets or clears it.
func keepCreatesTarget(r, old *snapshot.VirtualMachineRestore) {
	delete(r.Annotations, v1beta1.RestoreCreatesTargetAnnotation)
	if v, ok := old.Annotations[v1beta1.RestoreCreatesTargetAnnotation]; ok {
		metav1.SetMetaDataAnnotation(&r.ObjectMeta, v1beta1.RestoreCreatesTargetAnnotation, v)
	}
}

func (restoreStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineRestore(obj.(*snapshot.VirtualMachineRestore))
}

func (restoreStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (restoreStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineRestoreUpdate(obj.(*snapshot.VirtualMachineRestore), old.(*snapshot.VirtualMachineRestore))
}

func (restoreStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// statusStrategy implements writes through the status subresource: only the status changes.
type statusStrategy struct {
	restoreStrategy
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("spec"))
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	r, o := obj.(*snapshot.VirtualMachineRestore), old.(*snapshot.VirtualMachineRestore)
	r.Spec = o.Spec
	keepCreatesTarget(r, o)
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateObjectMetaUpdate(&obj.(*snapshot.VirtualMachineRestore).ObjectMeta, &old.(*snapshot.VirtualMachineRestore).ObjectMeta)
}

// GetAttrs returns the labels and fields a restore can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s, ok := obj.(*snapshot.VirtualMachineRestore)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachineRestore: %T", obj)
	}
	return s.Labels, generic.ObjectMetaFieldsSet(&s.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
