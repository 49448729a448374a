// Package virtualmachineinstance is the registry of VirtualMachineInstances: how they are
// created, updated, validated, stored, selected and printed.
package virtualmachineinstance

import (
	"context"
	"fmt"
	"slices"

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

// vmiStrategy implements the behaviour of VirtualMachineInstance writes through the main
// resource: the spec is fixed at creation, the status belongs to the controller and the node.
type vmiStrategy struct {
	namespaced.Strategy
}

// NewStrategy returns the strategy for VirtualMachineInstance create, update and delete.
func NewStrategy(typer runtime.ObjectTyper) vmiStrategy {
	return vmiStrategy{namespaced.NewStrategy(typer)}
}

func (vmiStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.For(fieldpath.MakePathOrDie("status"))
}

func (vmiStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	vmi := obj.(*kubevirt.VirtualMachineInstance)
	vmi.Status = kubevirt.VirtualMachineInstanceStatus{}
	vmi.Generation = 1
}

func (vmiStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	vmi := obj.(*kubevirt.VirtualMachineInstance)
	vmi.Status = old.(*kubevirt.VirtualMachineInstance).Status
	if s, ok := ctx.Value(volumeStatusKey{}).(kubevirt.VolumeStatus); ok && hotplugging(ctx) {
		vmi.Status.VolumeStatus = slices.DeleteFunc(slices.Clone(vmi.Status.VolumeStatus), func(v kubevirt.VolumeStatus) bool { return v.Name == s.Name })
		vmi.Status.VolumeStatus = append(vmi.Status.VolumeStatus, s)
	}
}

func (vmiStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineInstance(obj.(*kubevirt.VirtualMachineInstance))
}

func (vmiStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (vmiStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if hotplugging(ctx) {
		return validation.ValidateVirtualMachineInstanceHotplugUpdate(obj.(*kubevirt.VirtualMachineInstance), old.(*kubevirt.VirtualMachineInstance))
	}
	return validation.ValidateVirtualMachineInstanceUpdate(obj.(*kubevirt.VirtualMachineInstance), old.(*kubevirt.VirtualMachineInstance))
}

// hotplugKey marks the context of an update made by the addvolume and removevolume actions,
// the only writes that may change an instance's volumes.
type hotplugKey struct{}

func withHotplug(ctx context.Context) context.Context {
	return context.WithValue(ctx, hotplugKey{}, true)
}

func hotplugging(ctx context.Context) bool { v, _ := ctx.Value(hotplugKey{}).(bool); return v }

// volumeStatusKey carries the one volume status a hotplug action sets with its update: the
// memorydump action's, which names the dump's file.
type volumeStatusKey struct{}

func withVolumeStatus(ctx context.Context, s kubevirt.VolumeStatus) context.Context {
	return context.WithValue(ctx, volumeStatusKey{}, s)
}

func (vmiStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// vmiStatusStrategy implements writes through the status subresource: only the status changes.
type vmiStatusStrategy struct {
	vmiStrategy
}

// NewStatusStrategy returns the strategy of the status subresource.
func NewStatusStrategy(base vmiStrategy) vmiStatusStrategy {
	return vmiStatusStrategy{base}
}

func (vmiStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.For(fieldpath.MakePathOrDie("spec"))
}

func (vmiStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*kubevirt.VirtualMachineInstance).Spec = old.(*kubevirt.VirtualMachineInstance).Spec
}

func (vmiStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineInstanceStatusUpdate(obj.(*kubevirt.VirtualMachineInstance), old.(*kubevirt.VirtualMachineInstance))
}

// Field selectors beyond metadata: the node agent watches its node's instances, and
// tools filter by phase.
const (
	NodeNameField = "status.nodeName"
	PhaseField    = "status.phase"
	// TargetNodeField: the node agent of a migration's target watches the instances coming
	// to its node.
	TargetNodeField = "status.migrationState.targetNode"
)

// GetAttrs returns the labels and fields an instance can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	vmi, ok := obj.(*kubevirt.VirtualMachineInstance)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachineInstance: %T", obj)
	}
	return vmi.Labels, SelectableFields(vmi), nil
}

// SelectableFields returns the field set of an instance.
func SelectableFields(vmi *kubevirt.VirtualMachineInstance) fields.Set {
	target := ""
	if ms := vmi.Status.MigrationState; ms != nil {
		target = ms.TargetNode
	}
	return generic.AddObjectMetaFieldsSet(fields.Set{
		NodeNameField:   vmi.Status.NodeName,
		PhaseField:      string(vmi.Status.Phase),
		TargetNodeField: target,
	}, &vmi.ObjectMeta, true)
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

// NodeNameTriggerFunc lets the watch cache send a node's watchers only its instances.
func NodeNameTriggerFunc(obj runtime.Object) string {
	return obj.(*kubevirt.VirtualMachineInstance).Status.NodeName
}
