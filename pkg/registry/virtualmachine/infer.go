package virtualmachine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/instancetype/infer"
)

// A VM may take its instance type and preference from the labels of a volume's claim
// (spec.instancetype.inferFromVolume, spec.preference.inferFromVolume; pkg/instancetype/infer).
// virt-api resolves them when the VM is written, on create and on an update that sets
// inferFromVolume again (a manifest applied again, too: infer.ForgetMerged), so the stored VM names its instance type and preference as any other
// and expand-spec, the controller and the launcher pod checks never see inferFromVolume.
// expand-vm-spec resolves them the same way for the VM it previews.
//
// virt-api reads the claim with its own client, which may read every namespace's claims, but
// only after asking the cluster's authorizer (a SubjectAccessReview, as the requesting user)
// whether the user may get that claim: what a VM is stored with, and whether it is refused,
// must not tell its writer a claim's labels, or that it exists, when the writer could not read
// the claim. A user who may not is refused with 403 whatever the failure policy.

// ClaimGetter reads a PersistentVolumeClaim of kube-apiserver.
type ClaimGetter func(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)

// claimsAsUser reads claims for the user of the request in ctx: authorized, then read with
// virt-api's client.
type claimsAsUser struct {
	authorizer authorizer.Authorizer // nil: no check (standalone, every client an admin)
	get        ClaimGetter           // nil: no claims to read (standalone)
	vm         string
}

var _ infer.Reader = claimsAsUser{}

// ClaimLabels returns the labels of a claim the requesting user may get.
func (c claimsAsUser) ClaimLabels(ctx context.Context, path *field.Path, namespace, name string) (map[string]string, error) {
	if c.get == nil {
		return nil, field.Invalid(path, name, "claims are kept in the cluster, which this virt-api cannot read: name the instance type or preference")
	}
	if c.authorizer != nil {
		user, ok := genericapirequest.UserFrom(ctx)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("no user in the request to authorize reading claim %s/%s", namespace, name))
		}
		decision, reason, err := c.authorizer.Authorize(ctx, authorizer.AttributesRecord{
			User: user, Verb: "get", Namespace: namespace, Resource: "persistentvolumeclaims", Name: name,
			APIVersion: "v1", ResourceRequest: true,
		})
		if decision != authorizer.DecisionAllow {
			if err != nil {
				return nil, apierrors.NewInternalError(fmt.Errorf("authorize reading claim %s/%s: %w", namespace, name, err))
			}
			if reason != "" {
				reason = " (" + reason + ")"
			}
			return nil, apierrors.NewForbidden(kubevirt.Resource("virtualmachines"), c.vm, field.Forbidden(path,
				fmt.Sprintf("inferring from the claim %s needs to read it: user %q may not get persistentvolumeclaims in namespace %q%s",
					name, user.GetName(), namespace, reason)))
		}
	}
	claim, err := c.get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return claim.Labels, nil
}

// inferMatchers resolves vm's matchers that infer from a volume, in place, reading claims as
// the requesting user; the error is the VM's 422, a 403, or an internal error.
func (r *REST) inferMatchers(ctx context.Context, vm *kubevirt.VirtualMachine) error {
	return r.expander.inferMatchers(ctx, vm, claimsAsUser{authorizer: r.authorizer, get: r.claims, vm: vm.Name})
}

// InferMatchers resolves vm's matchers that infer from a volume with reader, as a write
// through the registry does before the strategy sees the VM (for tests of what virt-api
// accepts).
func (s vmStrategy) InferMatchers(ctx context.Context, vm *kubevirt.VirtualMachine, reader infer.Reader) error {
	return s.expander.inferMatchers(ctx, vm, reader)
}

func (e *expander) inferMatchers(ctx context.Context, vm *kubevirt.VirtualMachine, reader infer.Reader) error {
	if !infer.Wanted(vm) {
		return nil
	}
	if vm.Namespace == "" {
		vm.Namespace, _ = genericapirequest.NamespaceFrom(ctx)
	}
	result, err := infer.VirtualMachine(ctx, vm, reader)
	if err != nil {
		return err
	}
	if result.Dropped && vm.Spec.Instancetype == nil && vm.Spec.Preference == nil && vm.Spec.Template != nil {
		// The Ignore policy left a VM of its own template: defaulted as one written so is
		// (v1.SetDefaults_VirtualMachine), as its instance will be.
		tmpl, err := e.defaulted(vm.Spec.Template)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("default the template of %s/%s: %w", vm.Namespace, vm.Name, err))
		}
		vm.Spec.Template = tmpl
	}
	return nil
}

// inferringUpdate resolves inferFromVolume in the object an update makes. The object is the
// update's own (a copy of the request's, or the patched one), never the stored one.
type inferringUpdate struct {
	rest.UpdatedObjectInfo
	vms *REST
}

func (u inferringUpdate) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	obj, err := u.UpdatedObjectInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, err
	}
	if vm, ok := obj.(*kubevirt.VirtualMachine); ok {
		if oldVM, ok := old.(*kubevirt.VirtualMachine); ok {
			infer.ForgetMerged(vm, oldVM)
		}
		if err := u.vms.inferMatchers(ctx, vm); err != nil {
			return nil, err
		}
	}
	return obj, nil
}
