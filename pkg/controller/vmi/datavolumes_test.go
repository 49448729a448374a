package vmi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
)

func withDataVolume(name string) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: "root", VolumeSource: v1.VolumeSource{
			DataVolume: &v1.DataVolumeSource{Name: name}}})
	}
}

// dataVolumeLister is a dynamic informer's lister holding dvs, as unstructured objects.
func dataVolumeLister(t *testing.T, dvs ...*cdi.DataVolume) cache.GenericLister {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, dv := range dvs {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dv)
		require.NoError(t, err)
		require.NoError(t, indexer.Add(&unstructured.Unstructured{Object: obj}))
	}
	return cache.NewGenericLister(indexer, schema.GroupResource{Group: "cdi.kubevirt.io", Resource: "datavolumes"})
}

func newDataVolume(name string, phase cdi.DataVolumePhase) *cdi.DataVolume {
	return &cdi.DataVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: cdi.DataVolumeStatus{Phase: phase}}
}

// TestInstanceWaitsForItsDataVolumes: where the cluster serves CDI, an instance's launcher pod
// is made only once its DataVolumes are usable; meanwhile it stays Pending, not synchronized,
// with the reason. Without CDI, a dataVolume volume is the claim of its name.
func TestInstanceWaitsForItsDataVolumes(t *testing.T) {
	claim := newClaim("root-dv", ptr.To(corev1.PersistentVolumeFilesystem))
	tests := []struct {
		name        string
		cdi         bool
		dvs         []*cdi.DataVolume
		wantCreates int
		wantWaiting string
	}{
		{name: "filled", cdi: true, dvs: []*cdi.DataVolume{newDataVolume("root-dv", cdi.Succeeded)}, wantCreates: 1},
		{name: "waiting for its first consumer: the launcher pod is that consumer", cdi: true,
			dvs: []*cdi.DataVolume{newDataVolume("root-dv", cdi.WaitForFirstConsumer)}, wantCreates: 1},
		{name: "still importing", cdi: true, dvs: []*cdi.DataVolume{newDataVolume("root-dv", cdi.ImportInProgress)},
			wantWaiting: "DataVolume ns/root-dv is not ready (phase ImportInProgress), waiting for it"},
		{name: "no phase yet", cdi: true, dvs: []*cdi.DataVolume{newDataVolume("root-dv", "")},
			wantWaiting: "DataVolume ns/root-dv is not ready (phase none yet), waiting for it"},
		{name: "no DataVolume", cdi: true, wantWaiting: "DataVolume ns/root-dv does not exist, waiting for it to appear"},
		{name: "no CDI: the claim of its name", wantCreates: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []*v1.VirtualMachineInstance{newVMI(v1.VmPhaseUnset, withDataVolume("root-dv"))}, nil, claim)
			if tt.cdi {
				f.c.dataVolumes = dataVolumeLister(t, tt.dvs...)
			}
			require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
			assert.Len(t, testutil.Filter(f.kube.Actions(), "create", "pods", ""), tt.wantCreates)
			vmi := f.vmi("vm1")
			cond := condition(vmi, v1.VirtualMachineInstanceSynchronized)
			if tt.wantWaiting == "" {
				assert.Nil(t, cond)
				return
			}
			assert.Equal(t, v1.Pending, vmi.Status.Phase)
			require.NotNil(t, cond)
			assert.Equal(t, corev1.ConditionFalse, cond.Status)
			assert.Equal(t, DataVolumesNotReadyReason, cond.Reason)
			assert.Equal(t, tt.wantWaiting, cond.Message)
			assert.Equal(t, []string{"Normal DataVolumesNotReady " + tt.wantWaiting}, f.events())
		})
	}

	t.Run("once usable, the pod is made and the waiting condition goes", func(t *testing.T) {
		f := newFixture(t, []*v1.VirtualMachineInstance{newVMI(v1.VmPhaseUnset, withDataVolume("root-dv"))}, nil, claim)
		f.c.dataVolumes = dataVolumeLister(t, newDataVolume("root-dv", cdi.ImportInProgress))
		require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
		require.NoError(t, f.c.vmiIndexer.Update(f.vmi("vm1")))
		f.c.staleVersions.Forget("ns/vm1")
		f.c.dataVolumes = dataVolumeLister(t, newDataVolume("root-dv", cdi.Succeeded))
		require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
		assert.Len(t, testutil.Filter(f.kube.Actions(), "create", "pods", ""), 1)
		assert.Nil(t, condition(f.vmi("vm1"), v1.VirtualMachineInstanceSynchronized))
	})
}
