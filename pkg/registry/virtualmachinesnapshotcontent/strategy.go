// Package virtualmachinesnapshotcontent is the registry of VirtualMachineSnapshotContents:
// what a snapshot took (the VirtualMachine as it was and a VolumeSnapshot per claim), written
// by virt-controller's snapshot controller. The spec is fixed at creation.
package virtualmachinesnapshotcontent

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

type contentStrategy struct {
	namespaced.Strategy
}

// NewStrategy returns the strategy for content create, update and delete.
func NewStrategy(typer runtime.ObjectTyper) contentStrategy {
	return contentStrategy{namespaced.NewStrategy(typer)}
}

var servedVersions = []string{v1beta1.SchemeGroupVersion.String()}

func (contentStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("status"))
}

func (contentStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s := obj.(*snapshot.VirtualMachineSnapshotContent)
	s.Status = nil
	s.Generation = 1
}

func (contentStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*snapshot.VirtualMachineSnapshotContent).Status = old.(*snapshot.VirtualMachineSnapshotContent).Status
}

func (contentStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineSnapshotContent(obj.(*snapshot.VirtualMachineSnapshotContent))
}

func (contentStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (contentStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineSnapshotContentUpdate(obj.(*snapshot.VirtualMachineSnapshotContent), old.(*snapshot.VirtualMachineSnapshotContent))
}

func (contentStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// statusStrategy implements writes through the status subresource: only the status changes.
type statusStrategy struct {
	contentStrategy
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("spec"))
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*snapshot.VirtualMachineSnapshotContent).Spec = old.(*snapshot.VirtualMachineSnapshotContent).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateObjectMetaUpdate(&obj.(*snapshot.VirtualMachineSnapshotContent).ObjectMeta, &old.(*snapshot.VirtualMachineSnapshotContent).ObjectMeta)
}

// GetAttrs returns the labels and fields a content can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s, ok := obj.(*snapshot.VirtualMachineSnapshotContent)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachineSnapshotContent: %T", obj)
	}
	return s.Labels, generic.ObjectMetaFieldsSet(&s.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
