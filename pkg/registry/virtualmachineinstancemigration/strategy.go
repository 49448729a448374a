// Package virtualmachineinstancemigration is the registry of VirtualMachineInstanceMigrations:
// how they are created (and refused), updated, validated, stored, selected and printed.
package virtualmachineinstancemigration

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

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation"
	"github.com/hangarvm/hangar/pkg/registry/namespaced"
	"github.com/hangarvm/hangar/pkg/registry/resetfields"
)

// migrationStrategy implements migration writes through the main resource: the spec is fixed
// at creation, the status belongs to the controller.
type migrationStrategy struct {
	namespaced.Strategy
}

// NewStrategy returns the strategy for migration create, update and delete.
func NewStrategy(typer runtime.ObjectTyper) migrationStrategy {
	return migrationStrategy{namespaced.NewStrategy(typer)}
}

func (migrationStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.For(fieldpath.MakePathOrDie("status"))
}

// PrepareForCreate clears the status and labels the migration with its instance's name, as
// KubeVirt's mutating webhook does: clients (virtctl migrate-cancel, the controller) find an
// instance's migrations by that label.
func (migrationStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	m := obj.(*kubevirt.VirtualMachineInstanceMigration)
	m.Status = kubevirt.VirtualMachineInstanceMigrationStatus{}
	m.Generation = 1
	if m.Spec.VMIName != "" {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[v1.MigrationSelectorLabel] = m.Spec.VMIName
	}
}

func (migrationStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*kubevirt.VirtualMachineInstanceMigration).Status = old.(*kubevirt.VirtualMachineInstanceMigration).Status
}

func (migrationStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineInstanceMigration(obj.(*kubevirt.VirtualMachineInstanceMigration))
}

func (migrationStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (migrationStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineInstanceMigrationUpdate(obj.(*kubevirt.VirtualMachineInstanceMigration), old.(*kubevirt.VirtualMachineInstanceMigration))
}

func (migrationStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// migrationStatusStrategy implements writes through the status subresource: only the status
// changes.
type migrationStatusStrategy struct {
	migrationStrategy
}

// NewStatusStrategy returns the strategy of the status subresource.
func NewStatusStrategy(base migrationStrategy) migrationStatusStrategy {
	return migrationStatusStrategy{base}
}

func (migrationStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.For(fieldpath.MakePathOrDie("spec"))
}

func (migrationStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*kubevirt.VirtualMachineInstanceMigration).Spec = old.(*kubevirt.VirtualMachineInstanceMigration).Spec
}

func (migrationStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineInstanceMigrationStatusUpdate(obj.(*kubevirt.VirtualMachineInstanceMigration), old.(*kubevirt.VirtualMachineInstanceMigration))
}

// GetAttrs returns the labels and fields a migration can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, ok := obj.(*kubevirt.VirtualMachineInstanceMigration)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachineInstanceMigration: %T", obj)
	}
	return m.Labels, generic.ObjectMetaFieldsSet(&m.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
