// Package testutil helps the controllers' tests and benchmarks: what the fake clientsets lack.
package testutil

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	k8stesting "k8s.io/client-go/testing"
)

var uidCounter, versionCounter atomic.Int64

// Fake is what both fake clientsets offer.
type Fake interface {
	PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
}

// GenerateNames makes the fake clientset behave like an API server on create: a name from
// generateName when there is none, and a UID. It returns false so the tracker stores the object.
func GenerateNames(f Fake) {
	f.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(k8stesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		obj, err := meta.Accessor(create.GetObject())
		if err != nil {
			return false, nil, nil
		}
		if obj.GetName() == "" && obj.GetGenerateName() != "" {
			obj.SetName(obj.GetGenerateName() + utilrand.String(5))
		}
		if obj.GetUID() == "" {
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", uidCounter.Add(1))))
		}
		return false, nil, nil
	})
}

// BumpVersions makes the fake clientset give every created or updated object a new
// resourceVersion, as an API server does: for controllers that tell a stale cache by it.
func BumpVersions(f Fake) {
	bump := func(action k8stesting.Action) (bool, runtime.Object, error) {
		var obj runtime.Object
		switch a := action.(type) {
		case k8stesting.CreateAction:
			obj = a.GetObject()
		case k8stesting.UpdateAction:
			obj = a.GetObject()
		}
		if m, err := meta.Accessor(obj); err == nil && obj != nil {
			m.SetResourceVersion(fmt.Sprint(versionCounter.Add(1)))
		}
		return false, nil, nil
	}
	f.PrependReactor("create", "*", bump)
	f.PrependReactor("update", "*", bump)
}

// Filter returns the actions with the given verb and resource (subresource "" for the main one).
func Filter(actions []k8stesting.Action, verb, resource, subresource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			out = append(out, a)
		}
	}
	return out
}
