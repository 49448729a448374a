package apiserver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestVolumeSources: CDI's objects are read typed from what kube-apiserver serves of their
// CRDs; a VolumeSnapshot only for its labels; a missing object is not found.
func TestVolumeSources(t *testing.T) {
	object := func(gvr schema.GroupVersionResource, kind, name string, labels map[string]any, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": kind,
			"metadata": map[string]any{"namespace": "ns", "name": name, "labels": labels},
			"spec":     spec,
		}}
	}
	labels := map[string]any{"instancetype.kubevirt.io/default-instancetype": "u1.medium"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		dataVolumesGVR: "DataVolumeList", dataSourcesGVR: "DataSourceList", volumeSnapshotsGVR: "VolumeSnapshotList",
	},
		object(dataVolumesGVR, "DataVolume", "root", labels, map[string]any{
			"sourceRef": map[string]any{"kind": "DataSource", "namespace": "os-images", "name": "fedora"},
			"storage":   map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "30Gi"}}}}),
		object(dataSourcesGVR, "DataSource", "fedora", nil, map[string]any{
			"source": map[string]any{"pvc": map[string]any{"namespace": "os-images", "name": "fedora-root"}}}),
		object(volumeSnapshotsGVR, "VolumeSnapshot", "snap", labels, map[string]any{"source": map[string]any{"persistentVolumeClaimName": "root"}}),
	)
	s := volumeSources{dynamic: dyn}
	ctx := context.Background()

	dv, err := s.DataVolume(ctx, "ns", "root")
	require.NoError(t, err)
	assert.Equal(t, "u1.medium", dv.Labels["instancetype.kubevirt.io/default-instancetype"])
	require.NotNil(t, dv.Spec.SourceRef)
	assert.Equal(t, "fedora", dv.Spec.SourceRef.Name)
	assert.Equal(t, "os-images", *dv.Spec.SourceRef.Namespace)

	ds, err := s.DataSource(ctx, "ns", "fedora")
	require.NoError(t, err)
	assert.Empty(t, ds.Labels)
	require.NotNil(t, ds.Spec.Source.PVC)
	assert.Equal(t, "fedora-root", ds.Spec.Source.PVC.Name)

	snapLabels, err := s.SnapshotLabels(ctx, "ns", "snap")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"instancetype.kubevirt.io/default-instancetype": "u1.medium"}, snapLabels)

	_, err = s.DataVolume(ctx, "ns", "missing")
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	_, err = s.DataSource(ctx, "other", "fedora")
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	_, err = s.SnapshotLabels(ctx, "ns", "missing")
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}
