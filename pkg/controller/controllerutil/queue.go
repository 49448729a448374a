// Package controllerutil is the plumbing Hangar's controllers share: keys, the work queue and
// the worker loop of kubernetes/sample-controller.
package controllerutil

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// NewQueue returns a named rate-limited queue; the name labels the workqueue metrics.
func NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// Key is the namespace/name key of an informer object, tombstones included.
func Key(obj any) (string, bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return "", false
	}
	return key, true
}

// Object unwraps a tombstone.
func Object(obj any) (metav1.Object, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(metav1.Object)
	return o, ok
}

// Enqueue adds obj's key to queue.
func Enqueue(queue workqueue.TypedRateLimitingInterface[string], obj any) {
	if key, ok := Key(obj); ok {
		queue.Add(key)
	}
}

// RequeueAfter is an error that asks the worker to process the key again after a delay,
// without counting as a failure (for example, a start waiting out its back-off).
type RequeueAfter time.Duration

func (r RequeueAfter) Error() string { return fmt.Sprintf("requeue after %s", time.Duration(r)) }

// SyncFunc reconciles one key.
type SyncFunc func(ctx context.Context, key string) error

// RunWorkers runs workers goroutines that pop keys from queue and sync them, until ctx ends;
// then it shuts the queue down and returns once every sync in progress has returned, so a
// stopped controller (one that lost its leadership, say) no longer writes anything.
func RunWorkers(ctx context.Context, name string, queue workqueue.TypedRateLimitingInterface[string], workers int, reconcile SyncFunc) {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for processNext(ctx, name, queue, reconcile) {
				}
			}, time.Second)
		}()
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, name string, queue workqueue.TypedRateLimitingInterface[string], sync SyncFunc) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	err := sync(ctx, key)
	var after RequeueAfter
	switch {
	case err == nil:
		queue.Forget(key)
	case ctx.Err() != nil:
		// Stopping: the sync was cut short, and the next leader starts from its own list.
	case errors.As(err, &after):
		queue.Forget(key)
		queue.AddAfter(key, time.Duration(after))
	case apierrors.IsConflict(err):
		// A stale cache: the informer brings the newer object, try again soon.
		klog.V(4).InfoS("Conflict, retrying", "controller", name, "key", key)
		queue.AddRateLimited(key)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Sync failed, retrying", "controller", name, "key", key)
		queue.AddRateLimited(key)
	}
	return true
}
