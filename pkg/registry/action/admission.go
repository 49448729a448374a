package action

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/util/dryrun"
)

// Admission runs virt-api's admission chain on the writes an action makes to storage, as the
// API server's handlers run it on every create and update: the admission plugins,
// ValidatingAdmissionPolicies and webhooks on VMs see a start as the update of the VM it is
// (or of its status), asked for by the user who called the action. Without it an action
// would be a way around every policy on the resource it writes.
type Admission struct {
	// Chain is the server's admission chain; nil runs none (standalone).
	Chain admission.Interface
	// Objects converts and defaults for the chain (the server's scheme).
	Objects admission.ObjectInterfaces
}

// Target names what an action writes, as a request of its own would: the resource and
// subresource (status, or "" for the object), the kind in the request's version, the name.
type Target struct {
	Resource    schema.GroupVersionResource
	Subresource string
	Kind        schema.GroupVersionKind
	Name        string
}

func (a *Admission) attributes(ctx context.Context, t Target, obj, old runtime.Object, op admission.Operation, options runtime.Object, dryRun []string) admission.Attributes {
	namespace, _ := request.NamespaceFrom(ctx)
	user, _ := request.UserFrom(ctx)
	return admission.NewAttributesRecord(obj, old, t.Kind, namespace, t.Name, t.Resource, t.Subresource, op, options,
		dryrun.IsDryRun(dryRun), user)
}

// Update returns what a store's Update takes for an action's change (transform): the updated
// object, which mutating admission sees after transform, and the validation, which runs
// validating admission on the object about to be stored, inside the store's
// compare-and-swap as for any update.
func (a *Admission) Update(ctx context.Context, t Target, options *metav1.UpdateOptions, transform rest.TransformFunc) (rest.UpdatedObjectInfo, rest.ValidateObjectUpdateFunc) {
	if a == nil || a.Chain == nil {
		return rest.DefaultUpdatedObjectInfo(nil, transform), rest.ValidateAllObjectUpdateFunc
	}
	transformers := []rest.TransformFunc{transform}
	if m, ok := a.Chain.(admission.MutationInterface); ok && m.Handles(admission.Update) {
		transformers = append(transformers, func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
			return obj, m.Admit(ctx, a.attributes(ctx, t, obj, old, admission.Update, options, options.DryRun), a.Objects)
		})
	}
	return rest.DefaultUpdatedObjectInfo(nil, transformers...),
		rest.AdmissionToValidateObjectUpdateFunc(a.Chain, a.attributes(ctx, t, nil, nil, admission.Update, options, options.DryRun), a.Objects)
}

// Create runs mutating admission on obj, an action's create, and returns the validation a
// store's Create takes, which runs validating admission.
func (a *Admission) Create(ctx context.Context, t Target, obj runtime.Object, options *metav1.CreateOptions) (rest.ValidateObjectFunc, error) {
	if a == nil || a.Chain == nil {
		return rest.ValidateAllObjectFunc, nil
	}
	attrs := a.attributes(ctx, t, obj, nil, admission.Create, options, options.DryRun)
	if m, ok := a.Chain.(admission.MutationInterface); ok && m.Handles(admission.Create) {
		if err := m.Admit(ctx, attrs, a.Objects); err != nil {
			return nil, err
		}
	}
	return rest.AdmissionToValidateObjectFunc(a.Chain, attrs, a.Objects), nil
}
