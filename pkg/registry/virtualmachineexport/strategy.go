// Package virtualmachineexport is the registry of VirtualMachineExports: a VM's or a claim's
// volumes served for download. The spec is fixed at creation; the status belongs to
// virt-controller's export controller (pkg/controller/export).
package virtualmachineexport

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

	"github.com/hangarvm/hangar/pkg/apis/export"
	"github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/export/validation"
	"github.com/hangarvm/hangar/pkg/registry/namespaced"
	"github.com/hangarvm/hangar/pkg/registry/resetfields"
)

type exportStrategy struct {
	namespaced.Strategy
}

// NewStrategy returns the strategy for export create, update and delete.
func NewStrategy(typer runtime.ObjectTyper) exportStrategy {
	return exportStrategy{namespaced.NewStrategy(typer)}
}

var servedVersions = []string{v1beta1.SchemeGroupVersion.String()}

func (exportStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("status"))
}

func (exportStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	e := obj.(*export.VirtualMachineExport)
	e.Status = export.VirtualMachineExportStatus{}
	e.Generation = 1
}

func (exportStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*export.VirtualMachineExport).Status = old.(*export.VirtualMachineExport).Status
}

func (exportStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineExport(obj.(*export.VirtualMachineExport))
}

func (exportStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (exportStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineExportUpdate(obj.(*export.VirtualMachineExport), old.(*export.VirtualMachineExport))
}

func (exportStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// statusStrategy implements writes through the status subresource: only the status changes.
type statusStrategy struct {
	exportStrategy
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("spec"))
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*export.VirtualMachineExport).Spec = old.(*export.VirtualMachineExport).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateObjectMetaUpdate(obj.(*export.VirtualMachineExport), old.(*export.VirtualMachineExport))
}

// GetAttrs returns the labels and fields an export can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	e, ok := obj.(*export.VirtualMachineExport)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachineExport: %T", obj)
	}
	return e.Labels, generic.ObjectMetaFieldsSet(&e.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
