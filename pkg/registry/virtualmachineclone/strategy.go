// Package virtualmachineclone is the registry of VirtualMachineClones: a VirtualMachine, or a
// snapshot of one, cloned into a new VirtualMachine. The spec is fixed at creation; the
// status belongs to virt-controller's clone controller (pkg/controller/clone).
package virtualmachineclone

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/hangarvm/hangar/pkg/apis/clone"
	"github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/clone/validation"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/namespaced"
	"github.com/hangarvm/hangar/pkg/registry/resetfields"
)

type cloneStrategy struct {
	namespaced.Strategy
}

// NewStrategy returns the strategy for clone create, update and delete.
func NewStrategy(typer runtime.ObjectTyper) cloneStrategy {
	return cloneStrategy{namespaced.NewStrategy(typer)}
}

var servedVersions = []string{v1beta1.SchemeGroupVersion.String()}

func (cloneStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("status"))
}

func (cloneStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	c := obj.(*clone.VirtualMachineClone)
	c.Status = clone.VirtualMachineCloneStatus{}
	c.Generation = 1
	defaultTarget(c, rand.String(5))
}

// defaultTarget names the target when the clone does not, as KubeVirt's mutating webhook:
// clone-<source>-<5 random characters>, a kubevirt.io VirtualMachine.
func defaultTarget(c *clone.VirtualMachineClone, suffix string) {
	if c.Spec.Source == nil {
		return // refused by validation
	}
	name := fmt.Sprintf("clone-%s-%s", c.Spec.Source.Name, suffix)
	switch {
	case c.Spec.Target == nil:
		c.Spec.Target = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(kubevirt.GroupName), Kind: "VirtualMachine", Name: name}
	case c.Spec.Target.Name == "":
		c.Spec.Target.Name = name
	}
}

func (cloneStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*clone.VirtualMachineClone).Status = old.(*clone.VirtualMachineClone).Status
}

func (cloneStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineClone(obj.(*clone.VirtualMachineClone))
}

func (cloneStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (cloneStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtualMachineCloneUpdate(obj.(*clone.VirtualMachineClone), old.(*clone.VirtualMachineClone))
}

func (cloneStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// statusStrategy implements writes through the status subresource: only the status changes.
type statusStrategy struct {
	cloneStrategy
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetfields.ForGroupVersions(servedVersions, fieldpath.MakePathOrDie("spec"))
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*clone.VirtualMachineClone).Spec = old.(*clone.VirtualMachineClone).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateObjectMetaUpdate(obj.(*clone.VirtualMachineClone), old.(*clone.VirtualMachineClone))
}

// GetAttrs returns the labels and fields a clone can be selected by.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	c, ok := obj.(*clone.VirtualMachineClone)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtualMachineClone: %T", obj)
	}
	return c.Labels, generic.ObjectMetaFieldsSet(&c.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
