// Package virtualmachinesnapshot is the registry of VirtualMachineSnapshots: how they are
// created (and refused), updated, validated, stored, selected and printed. A snapshot's spec
// is fixed at creation; its status belongs to virt-controller's snapshot controller.
package virtualmachinesnapshot

import (
	"context"
	"fmt"

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

type snapshotStrategy struct {
	namespaced.Strategy
}

// NewStrategy returns the strategy for snapshot create, update and delete.
func NewStrategy(typer runtime.ObjectTyper) snapshotStrategy {
	return snapshotStrategy{namespaced.NewStrategy(typer)}
}

var servedVersions = []string{v1beta1.SchemeGroupVersion.String()}

func (snapshotStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("status"))
}

func (snapshotStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s := obj.(*snapshot.VirtualMachineSnapshot)
	s.Status = nil
	s.Generation = 1
}

func (snapshotStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*snapshot.VirtualMachineSnapshot).Status = old.(*snapshot.VirtualMachineSnapshot).Status
}

func (snapshotStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineSnapshot(obj.(*snapshot.VirtualMachineSnapshot))
}

func (snapshotStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (snapshotStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineSnapshotUpdate(obj.(*snapshot.VirtualMachineSnapshot), old.(*snapshot.VirtualMachineSnapshot))
}

func (snapshotStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// statusStrategy implements writes through the status subresource: only the status changes.
type statusStrategy struct {
	snapshotStrategy
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("spec"))
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*snapshot.VirtualMachineSnapshot).Spec = old.(*snapshot.VirtualMachineSnapshot).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateObjectMetaUpdate(&obj.(*snapshot.VirtualMachineSnapshot).ObjectMeta, &old.(*snapshot.VirtualMachineSnapshot).ObjectMeta)
}

// GetAttrs returns the labels and fields a snapshot can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s, ok := obj.(*snapshot.VirtualMachineSnapshot)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachineSnapshot: %T", obj)
	}
	return s.Labels, generic.ObjectMetaFieldsSet(&s.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
