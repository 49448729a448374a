package virtualmachineinstance

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
)

// Create refuses an instance whose volumes name DataVolumes where the cluster does not serve
// CDI (422), before the object's other validation. Where it does, the DataVolume need not
// exist yet (CDI may also have collected it, leaving its claim): virt-controller waits for it
// with a reason. An instance's volumes do not change after create.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if vmi, ok := obj.(*kubevirt.VirtualMachineInstance); ok {
			if err := cdi.RequireServedFor(ctx, r.cdi, kubevirt.Kind("VirtualMachineInstance"), vmi.Name,
				vmi.Spec.Volumes, field.NewPath("spec", "volumes")); err != nil {
				return err
			}
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}, options)
}
