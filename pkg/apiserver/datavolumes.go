package apiserver

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/hangarvm/hangar/pkg/registry/cdi"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachine"
)

// dataVolumesGVR is CDI's DataVolumes.
var dataVolumesGVR = schema.GroupVersionResource{Group: cdi.Group, Version: "v1beta1", Resource: cdi.DataVolumeResource}

// How long an answer of discovery is believed: a cluster that serves CDI rarely stops, one
// that does not may install it any minute (and the user retries the refused VM).
const (
	cdiServedTTL    = time.Minute
	cdiNotServedTTL = 10 * time.Second
)

// cdiLookup is what virt-api asks kube-apiserver about CDI: whether it serves
// cdi.kubevirt.io/v1beta1 datavolumes (discovery, cached), and whether a DataVolume exists (a
// read, only for VMs that name one without a template, or whose user may not create them).
type cdiLookup struct {
	discovery discovery.DiscoveryInterface
	dynamic   dynamic.Interface
	now       func() time.Time

	mu      sync.Mutex
	served  bool
	checked time.Time
}

var _ virtualmachine.DataVolumeLookup = &cdiLookup{}

func newCDILookup(d discovery.DiscoveryInterface, dyn dynamic.Interface) *cdiLookup {
	return &cdiLookup{discovery: d, dynamic: dyn, now: time.Now}
}

// Served asks discovery at most once per TTL; concurrent callers wait for one answer.
func (l *cdiLookup) Served(context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ttl := cdiNotServedTTL
	if l.served {
		ttl = cdiServedTTL
	}
	if !l.checked.IsZero() && l.now().Sub(l.checked) < ttl {
		return l.served, nil
	}
	resources, err := l.discovery.ServerResourcesForGroupVersion(dataVolumesGVR.GroupVersion().String())
	served := false
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, err
	default:
		for _, r := range resources.APIResources {
			if r.Name == dataVolumesGVR.Resource {
				served = true
			}
		}
	}
	l.served, l.checked = served, l.now()
	return served, nil
}

func (l *cdiLookup) Exists(ctx context.Context, namespace, name string) (bool, error) {
	_, err := l.dynamic.Resource(dataVolumesGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
