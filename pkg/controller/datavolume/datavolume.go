// Package datavolume reads CDI's DataVolumes (cdi.kubevirt.io) from an informer's cache, for
// the controllers that wait for them: the VM controller before it makes a VM's instance, the
// VMI controller before it makes an instance's launcher pod.
package datavolume

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// Get reads the DataVolume namespace/name from lister (a dynamic informer's), nil when there
// is none.
func Get(lister cache.GenericLister, namespace, name string) (*cdi.DataVolume, error) {
	obj, err := lister.ByNamespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read DataVolume %s/%s: %w", namespace, name, err)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("DataVolume %s/%s: unexpected %T in the cache", namespace, name, obj)
	}
	var dv cdi.DataVolume
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dv); err != nil {
		return nil, fmt.Errorf("decode DataVolume %s/%s: %w", namespace, name, err)
	}
	return &dv, nil
}

// Usable says whether a pod may use the DataVolume's claim: CDI filled it, or waits for its
// first consumer (the pod is that consumer).
func Usable(dv *cdi.DataVolume) bool {
	switch dv.Status.Phase {
	case cdi.Succeeded, cdi.WaitForFirstConsumer, cdi.PendingPopulation:
		return true
	}
	return false
}
