// Package virtualmachine is the registry of VirtualMachines: how they are created, updated,
// validated, stored and printed.
package virtualmachine

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
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

// vmStrategy implements the behaviour of VirtualMachine writes through the main resource:
// the spec is the user's, the status the controller's. A VM that names an instance type or
// a preference is validated as its instance will be, with its template expanded.
type vmStrategy struct {
	namespaced.Strategy
	expander *expander
}

// NewStrategy returns the strategy for VirtualMachine create, update and delete; instancetypes
// is where the instance types and preferences VMs name are read (nil: VMs cannot name any).
func NewStrategy(scheme *runtime.Scheme, instancetypes *Instancetypes) vmStrategy {
	return vmStrategy{namespaced.NewStrategy(scheme), &expander{scheme: scheme, from: instancetypes}}
}

// GetResetFields keeps writes to the main resource from touching the status.
func (vmStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.For(fieldpath.MakePathOrDie("status"))
}

func (vmStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	vm := obj.(*kubevirt.VirtualMachine)
	vm.Status = kubevirt.VirtualMachineStatus{}
	vm.Generation = 1
}

func (vmStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	vm, oldVM := obj.(*kubevirt.VirtualMachine), old.(*kubevirt.VirtualMachine)
	vm.Status = oldVM.Status
	// The controller compares status.observedGeneration against this to see new intent.
	if !apiequality.Semantic.DeepEqual(vm.Spec, oldVM.Spec) {
		vm.Generation = oldVM.Generation + 1
	}
}

func (s vmStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return s.expander.validateExpanded(ctx, obj.(*kubevirt.VirtualMachine), validation.ValidateVirtualMachine)
}

func (vmStrategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return runningWarnings(obj.(*kubevirt.VirtualMachine))
}

func (s vmStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	allErrs := validation.ValidateVirtualMachineLocks(obj.(*kubevirt.VirtualMachine), old.(*kubevirt.VirtualMachine))
	return append(allErrs, s.expander.validateExpanded(ctx, obj.(*kubevirt.VirtualMachine), func(vm *kubevirt.VirtualMachine) field.ErrorList {
		return validation.ValidateVirtualMachineUpdate(vm, old.(*kubevirt.VirtualMachine))
	})...)
}

func (vmStrategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return runningWarnings(obj.(*kubevirt.VirtualMachine))
}

func runningWarnings(vm *kubevirt.VirtualMachine) []string {
	if vm.Spec.Running == nil {
		return nil
	}
	return []string{fmt.Sprintf("spec.running is deprecated, use spec.runStrategy: %s instead", kubevirt.RunStrategyFromRunning(*vm.Spec.Running))}
}

// vmStatusStrategy implements writes through the status subresource: only the status changes.
type vmStatusStrategy struct {
	vmStrategy
}

// NewStatusStrategy returns the strategy of the status subresource.
func NewStatusStrategy(base vmStrategy) vmStatusStrategy {
	return vmStatusStrategy{base}
}

func (vmStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.For(fieldpath.MakePathOrDie("spec"))
}

func (vmStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*kubevirt.VirtualMachine).Spec = old.(*kubevirt.VirtualMachine).Spec
}

func (vmStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineStatusUpdate(obj.(*kubevirt.VirtualMachine), old.(*kubevirt.VirtualMachine))
}

func (vmStatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns the labels and fields a VirtualMachine can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	vm, ok := obj.(*kubevirt.VirtualMachine)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachine: %T", obj)
	}
	return vm.Labels, generic.ObjectMetaFieldsSet(&vm.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
