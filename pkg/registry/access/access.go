// Package access asks the cluster's authorizer whether the user making a request may do
// something else themselves. virt-api uses it where an object it stores makes a controller
// act with the controller's own rights (a snapshot makes VolumeSnapshots, a restore makes
// claims and VMs): nobody gets through Hangar what they could not do directly.
package access

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Need is one right the requesting user must have, and the field of the object that needs it.
type Need struct {
	// Verb, Group, Version and Resource name the right, in Namespace.
	Verb, Group, Version, Resource, Namespace string
	// Name, when set, narrows the right to that object (a role's resourceNames may grant it).
	Name string
	// Field is the field of the object that asks for it.
	Field *field.Path
	// Why says what the right is for, in the refusal.
	Why string
}

// Check returns a 403 naming the first need the requesting user lacks, nil when they have
// them all or authz is nil (standalone: no cluster, no controllers acting on its behalf).
// resource and name are the object being written.
func Check(ctx context.Context, authz authorizer.Authorizer, resource schema.GroupResource, name string, needs ...Need) error {
	if authz == nil {
		return nil
	}
	user, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("no user in the request to check %s %s against", resource, name))
	}
	for _, n := range needs {
		decision, reason, err := authz.Authorize(ctx, authorizer.AttributesRecord{
			User: user, Verb: n.Verb, Namespace: n.Namespace, APIGroup: n.Group, APIVersion: n.Version,
			Resource: n.Resource, Name: n.Name, ResourceRequest: true,
		})
		if decision == authorizer.DecisionAllow {
			continue
		}
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("authorize %s %s for %s %s: %w", n.Verb, n.Resource, resource, name, err))
		}
		qualified := n.Resource
		if n.Group != "" {
			qualified += "." + n.Group
		}
		detail := ""
		if reason != "" {
			detail = " (" + reason + ")"
		}
		return apierrors.NewForbidden(resource, name, field.Forbidden(n.Field,
			fmt.Sprintf("%s: user %q may not %s %s in namespace %q%s", n.Why, user.GetName(), n.Verb, qualified, n.Namespace, detail)))
	}
	return nil
}

// Namespace is the namespace of the object being written: its own, else the request's.
func Namespace(ctx context.Context, own string) string {
	if own != "" {
		return own
	}
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	return ns
}
