package apiserver

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/hangarvm/hangar/pkg/registry/virtualmachine"
)

// The kinds a DataVolume is made of that virt-api reads for inferFromVolume, besides
// DataVolumes (dataVolumesGVR).
var (
	dataSourcesGVR     = cdi.SchemeGroupVersion.WithResource(virtualmachine.DataSourceResource)
	volumeSnapshotsGVR = schema.GroupVersionResource{Group: virtualmachine.SnapshotGroup, Version: "v1", Resource: virtualmachine.VolumeSnapshotResource}
)

// volumeSources reads DataVolumes, DataSources and VolumeSnapshots from kube-apiserver, one by
// name, for the VMs that infer their instance type and preference from them (asked only for a
// VM written with inferFromVolume, after the user's own right to read each is checked). They
// are CRDs, served or not: the dynamic client reads them without their clientsets, and a kind
// the cluster does not serve is not found, as a missing object is.
type volumeSources struct {
	dynamic dynamic.Interface
}

var _ virtualmachine.VolumeSourceGetter = volumeSources{}

func (s volumeSources) DataVolume(ctx context.Context, namespace, name string) (*cdi.DataVolume, error) {
	dv := &cdi.DataVolume{}
	return dv, s.get(ctx, dataVolumesGVR, namespace, name, dv)
}

func (s volumeSources) DataSource(ctx context.Context, namespace, name string) (*cdi.DataSource, error) {
	ds := &cdi.DataSource{}
	return ds, s.get(ctx, dataSourcesGVR, namespace, name, ds)
}

// SnapshotLabels reads no more of a VolumeSnapshot than its metadata: its spec and status are
// the CSI snapshotter's, and nothing here needs them.
func (s volumeSources) SnapshotLabels(ctx context.Context, namespace, name string) (map[string]string, error) {
	obj, err := s.dynamic.Resource(volumeSnapshotsGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.GetLabels(), nil
}

// get reads the object namespace/name of gvr into typed.
func (s volumeSources) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, typed any) error {
	obj, err := s.dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.UnstructuredContent(), typed); err != nil {
		return fmt.Errorf("decode %s %s/%s: %w", gvr.GroupResource(), namespace, name, err)
	}
	return nil
}
