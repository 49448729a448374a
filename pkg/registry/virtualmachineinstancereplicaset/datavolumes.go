package virtualmachineinstancereplicaset

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
)

// A replica set whose template's volumes name DataVolumes is refused (422) where the cluster
// does not serve CDI, on create and on an update that names them; its instances would
// otherwise wait for DataVolumes nobody fills.

// Create checks the template's DataVolumes before the object's other validation.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if err := r.checkDataVolumes(ctx, nil, obj); err != nil {
			return err
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}, options)
}

// Update checks the template's DataVolumes when the update is the one that names them.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	checkedCreate := func(ctx context.Context, obj runtime.Object) error {
		if err := r.checkDataVolumes(ctx, nil, obj); err != nil {
			return err
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}
	return r.Store.Update(ctx, name, objInfo, checkedCreate, func(ctx context.Context, obj, old runtime.Object) error {
		if err := r.checkDataVolumes(ctx, old, obj); err != nil {
			return err
		}
		if updateValidation != nil {
			return updateValidation(ctx, obj, old)
		}
		return nil
	}, forceAllowCreate, options)
}

// checkDataVolumes refuses obj's template naming DataVolumes where CDI is not served, unless
// old's (nil on create) named them already: a replica set is not stuck because CDI went away.
func (r *REST) checkDataVolumes(ctx context.Context, old, obj runtime.Object) error {
	rs, ok := obj.(*kubevirt.VirtualMachineInstanceReplicaSet)
	if !ok || rs.Spec.Template == nil {
		return nil
	}
	if oldRS, ok := old.(*kubevirt.VirtualMachineInstanceReplicaSet); ok && oldRS.Spec.Template != nil {
		if _, at := cdi.FirstVolume(oldRS.Spec.Template.Spec.Volumes, nil); at != nil {
			return nil
		}
	}
	return cdi.RequireServedFor(ctx, r.cdi, kubevirt.Kind("VirtualMachineInstanceReplicaSet"), rs.Name,
		rs.Spec.Template.Spec.Volumes, field.NewPath("spec", "template", "spec", "volumes"))
}
