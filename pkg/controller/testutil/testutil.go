// Package testutil helps the controllers' tests and benchmarks: what the fake clientsets lack.
package testutil

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
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

// SelectWatches makes the fake clientset's watches keep to their label selector, as an API
// server's do (its lists do already): an informer of a few labelled pods must not cache
// every pod, which would count in a benchmark's heap.
func SelectWatches(f interface {
	PrependWatchReactor(resource string, reaction k8stesting.WatchReactionFunc)
	Tracker() k8stesting.ObjectTracker
}) {
	f.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		wa, ok := action.(k8stesting.WatchActionImpl)
		if !ok || wa.GetWatchRestrictions().Labels == nil || wa.GetWatchRestrictions().Labels.Empty() {
			return false, nil, nil
		}
		w, err := f.Tracker().Watch(action.GetResource(), action.GetNamespace(), wa.ListOptions)
		if err != nil {
			return true, nil, err
		}
		selector := wa.GetWatchRestrictions().Labels
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			m, err := meta.Accessor(e.Object)
			return e, err != nil || selector.Matches(labels.Set(m.GetLabels()))
		}), nil
	})
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
