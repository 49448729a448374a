package virtualmachine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// A VM whose guest keeps EFI variables or TPM state gets its state claim
// (persistent-state-for-<VM>) from virt-controller, which may create claims in any namespace.
// So that nobody gets a claim through Hangar who could not create it, virt-api asks the
// cluster's authorizer (a SubjectAccessReview, as the requesting user) whether the user may
// create persistentvolumeclaims in the VM's namespace, whenever a write makes a VM need a
// state claim it did not need before; virt-controller creates claims only for VMs stored
// here, so every claim it makes was allowed to someone who could have made it. The check is
// part of the registry, not an admission plugin that could be turned off.
//
// A claim that already exists (an admin made persistent-state-for-<VM> for a user who may not
// create claims) needs no right: virt-controller creates nothing then, and any pod of the
// namespace could mount that claim by its name.

// persistentStateFields are the paths of the template's fields that ask for a state claim.
func persistentStateFields(vm *kubevirt.VirtualMachine) []*field.Path {
	if vm == nil || vm.Spec.Template == nil {
		return nil
	}
	spec := &vm.Spec.Template.Spec
	domain := field.NewPath("spec", "template", "spec", "domain")
	var out []*field.Path
	if fw := spec.Domain.Firmware; fw != nil && fw.Bootloader != nil && fw.Bootloader.EFI != nil {
		if p := fw.Bootloader.EFI.Persistent; p != nil && *p {
			out = append(out, domain.Child("firmware", "bootloader", "efi", "persistent"))
		}
	}
	if t := spec.Domain.Devices.TPM; t != nil && (t.Enabled == nil || *t.Enabled) && t.Persistent != nil && *t.Persistent {
		out = append(out, domain.Child("devices", "tpm", "persistent"))
	}
	return out
}

// checkStateClaim refuses, with 403, a write that makes vm need a state claim when the
// requesting user may not create claims in its namespace. old is nil on create.
func (r *REST) checkStateClaim(ctx context.Context, old, vm *kubevirt.VirtualMachine) error {
	fields := persistentStateFields(vm)
	if len(fields) == 0 || len(persistentStateFields(old)) > 0 {
		return nil
	}
	if r.authorizer == nil {
		return nil // standalone: no cluster, every client an admin, no controller making claims
	}
	user, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("no user in the request to check the state claim against"))
	}
	ns := vm.Namespace
	if ns == "" {
		ns, _ = genericapirequest.NamespaceFrom(ctx)
	}
	decision, reason, err := r.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: user, Verb: "create", Namespace: ns, Resource: "persistentvolumeclaims",
		APIVersion: "v1", ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if r.claimExists != nil {
		exists, lerr := r.claimExists(ctx, ns, layout.StateClaimPrefix+vm.Name)
		if lerr != nil {
			return apierrors.NewInternalError(fmt.Errorf("look up the state claim of %s/%s: %w", ns, vm.Name, lerr))
		}
		if exists {
			return nil
		}
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorize the state claim of %s/%s: %w", ns, vm.Name, err))
	}
	detail := ""
	if reason != "" {
		detail = " (" + reason + ")"
	}
	return apierrors.NewForbidden(kubevirt.Resource("virtualmachines"), vm.Name,
		field.Forbidden(fields[0], fmt.Sprintf("keeping state needs the claim %s%s, which Hangar creates for the VM: user %q may not create persistentvolumeclaims in namespace %q%s",
			layout.StateClaimPrefix, vm.Name, user.GetName(), ns, detail)))
}

// ClaimExists says whether a persistentvolumeclaim exists (a read of kube-apiserver).
type ClaimExists func(ctx context.Context, namespace, name string) (bool, error)

// Create resolves the matchers that infer from a volume (infer.go), then checks the state
// claim and the DataVolumes (datavolumes.go) before the object's other validation.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if vm, ok := obj.(*kubevirt.VirtualMachine); ok {
		if err := r.inferMatchers(ctx, vm); err != nil {
			return nil, err
		}
	}
	return r.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if vm, ok := obj.(*kubevirt.VirtualMachine); ok {
			if err := r.checkStateClaim(ctx, nil, vm); err != nil {
				return err
			}
			if err := r.checkDataVolumes(ctx, nil, vm); err != nil {
				return err
			}
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}, options)
}

// Update resolves the matchers the update makes infer from a volume (infer.go), and checks the
// state claim when the update makes the VM need one.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	checkedCreate := func(ctx context.Context, obj runtime.Object) error {
		if vm, ok := obj.(*kubevirt.VirtualMachine); ok {
			if err := r.checkStateClaim(ctx, nil, vm); err != nil {
				return err
			}
			if err := r.checkDataVolumes(ctx, nil, vm); err != nil {
				return err
			}
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}
	return r.Store.Update(ctx, name, inferringUpdate{UpdatedObjectInfo: objInfo, vms: r}, checkedCreate, func(ctx context.Context, obj, old runtime.Object) error {
		vm, ok := obj.(*kubevirt.VirtualMachine)
		oldVM, oldOK := old.(*kubevirt.VirtualMachine)
		if ok && oldOK {
			if err := r.checkStateClaim(ctx, oldVM, vm); err != nil {
				return err
			}
			if err := r.checkDataVolumes(ctx, oldVM, vm); err != nil {
				return err
			}
		}
		if updateValidation != nil {
			return updateValidation(ctx, obj, old)
		}
		return nil
	}, forceAllowCreate, options)
}
