// Package watch keeps a clusterconfig.Store in step with the ConfigMap hangar-config.
package watch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/hangarvm/hangar/pkg/clusterconfig"
)

// Watch keeps the store s in step with the ConfigMap namespace/name until ctx ends. It returns
// once the first list has been applied, so the controllers start with the real configuration.
func Watch(ctx context.Context, s *clusterconfig.Store, client kubernetes.Interface, namespace, name string) error {
	synced, err := Start(ctx, s, client, namespace, name)
	if err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return fmt.Errorf("configmap %s/%s: cache did not sync", namespace, name)
	}
	return nil
}

// Start is Watch without the wait: it returns at once with a function that tells whether the
// first list has been applied. virt-api uses it, waiting for the list only when a request
// needs the configuration. The list and watch name the one ConfigMap (a field selector on
// metadata.name), so RBAC can grant them by resourceNames.
func Start(ctx context.Context, s *clusterconfig.Store, client kubernetes.Interface, namespace, name string) (cache.InformerSynced, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	informer := factory.Core().V1().ConfigMaps().Informer()
	// The field selector is an optimisation; the filter is the guarantee.
	ours := func(obj any) bool {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		cm, ok := obj.(*corev1.ConfigMap)
		return ok && cm.Namespace == namespace && cm.Name == name
	}
	registration, err := informer.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: ours,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.Apply(obj.(*corev1.ConfigMap)) },
			UpdateFunc: func(_, obj any) { s.Apply(obj.(*corev1.ConfigMap)) },
			DeleteFunc: func(any) { s.Apply(nil) },
		},
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	// The registration's HasSynced, unlike the informer's, waits until the handler has applied
	// the first list.
	return registration.HasSynced, nil
}
