package vm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// withDataVolume gives the VM the DataVolume template root-dv (from a DataSource, as
// KubeVirt's docs write it) as its first volume.
func withDataVolume(vm *v1.VirtualMachine) *v1.VirtualMachine {
	vm.Spec.DataVolumeTemplates = []v1.DataVolumeTemplateSpec{{
		ObjectMeta: metav1.ObjectMeta{Name: "root-dv", Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
		Spec: cdiv1beta1.DataVolumeSpec{
			SourceRef: &cdiv1beta1.DataVolumeSourceRef{Kind: "DataSource", Name: "fedora", Namespace: ptr.To("os-images")},
			Storage: &cdiv1beta1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("30Gi")}}},
		},
	}}
	vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes,
		v1.Volume{Name: "rootdisk", VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: "root-dv"}}})
	return vm
}

// cdiDataVolume is a DataVolume as CDI reports it: its phase and its Running condition.
func cdiDataVolume(name string, phase cdi.DataVolumePhase, runningReason string) *unstructured.Unstructured {
	dv := &cdi.DataVolume{TypeMeta: metav1.TypeMeta{APIVersion: "cdi.kubevirt.io/v1beta1", Kind: "DataVolume"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: cdi.DataVolumeStatus{Phase: phase}}
	if runningReason != "" {
		dv.Status.Conditions = []cdi.DataVolumeCondition{{Type: cdi.DataVolumeRunning, Status: corev1.ConditionFalse, Reason: runningReason}}
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dv)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: u}
}

// withDataVolumes turns DataVolumes on, the cluster (and the controller's caches) holding dvs
// and claims.
func (f *fixture) withDataVolumes(dvs []*unstructured.Unstructured, claims ...*corev1.PersistentVolumeClaim) *dynamicfake.FakeDynamicClient {
	var objs []runtime.Object
	for _, dv := range dvs {
		objs = append(objs, dv)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{DataVolumesGVR: "DataVolumeList"}, objs...)
	dvInformer := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0).ForResource(DataVolumesGVR)
	for _, dv := range dvs {
		require.NoError(f.t, dvInformer.Informer().GetIndexer().Add(dv))
	}
	pvcInformer := informers.NewSharedInformerFactory(kubefake.NewSimpleClientset(), 0).Core().V1().PersistentVolumeClaims()
	for _, c := range claims {
		require.NoError(f.t, pvcInformer.Informer().GetIndexer().Add(c))
	}
	require.NoError(f.t, f.c.EnableDataVolumes(dyn, dvInformer, pvcInformer.Lister()))
	return dyn
}

func createdDataVolumes(t *testing.T, dyn *dynamicfake.FakeDynamicClient) []*cdi.DataVolume {
	var out []*cdi.DataVolume
	for _, a := range dyn.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource() == DataVolumesGVR {
			var dv cdi.DataVolume
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(c.GetObject().(*unstructured.Unstructured).Object, &dv))
			out = append(out, &dv)
		}
	}
	return out
}

func TestDataVolumes(t *testing.T) {
	pendingClaim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "root-dv"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	tests := []struct {
		name        string
		vm          *v1.VirtualMachine
		existing    []*unstructured.Unstructured
		claims      []*corev1.PersistentVolumeClaim
		wantCreated bool
		wantVMI     bool
		wantStatus  v1.VirtualMachinePrintableStatus
	}{
		{name: "running VM: the DataVolume is created, the instance waits", vm: withDataVolume(newVM(v1.RunStrategyAlways)),
			wantCreated: true, wantStatus: v1.VirtualMachineStatusProvisioning},
		{name: "halted VM: the DataVolume is created all the same", vm: withDataVolume(newVM(v1.RunStrategyHalted)),
			wantCreated: true, wantStatus: v1.VirtualMachineStatusProvisioning},
		{name: "importing", vm: withDataVolume(newVM(v1.RunStrategyAlways)),
			existing: []*unstructured.Unstructured{cdiDataVolume("root-dv", cdi.ImportInProgress, "")}, wantStatus: v1.VirtualMachineStatusProvisioning},
		{name: "its claim waits for a volume", vm: withDataVolume(newVM(v1.RunStrategyAlways)),
			existing: []*unstructured.Unstructured{cdiDataVolume("root-dv", cdi.Pending, "")}, claims: []*corev1.PersistentVolumeClaim{pendingClaim},
			wantStatus: v1.VirtualMachineStatusWaitingForVolumeBinding},
		{name: "failed", vm: withDataVolume(newVM(v1.RunStrategyAlways)),
			existing: []*unstructured.Unstructured{cdiDataVolume("root-dv", cdi.Failed, "")}, wantStatus: v1.VirtualMachineStatusDataVolumeError},
		{name: "the importer fails (CDI retries)", vm: withDataVolume(newVM(v1.RunStrategyAlways)),
			existing: []*unstructured.Unstructured{cdiDataVolume("root-dv", cdi.ImportInProgress, "Error")}, wantStatus: v1.VirtualMachineStatusDataVolumeError},
		{name: "succeeded: the instance starts", vm: withDataVolume(newVM(v1.RunStrategyAlways)),
			existing: []*unstructured.Unstructured{cdiDataVolume("root-dv", cdi.Succeeded, "")}, wantVMI: true, wantStatus: v1.VirtualMachineStatusStarting},
		{name: "waiting for its first consumer: the instance starts, its launcher pod is that consumer", vm: withDataVolume(newVM(v1.RunStrategyAlways)),
			existing: []*unstructured.Unstructured{cdiDataVolume("root-dv", cdi.WaitForFirstConsumer, "")}, claims: []*corev1.PersistentVolumeClaim{pendingClaim},
			wantVMI: true, wantStatus: v1.VirtualMachineStatusStarting},
		{name: "a halted VM whose DataVolume is filled is Stopped", vm: withDataVolume(newVM(v1.RunStrategyHalted)),
			existing: []*unstructured.Unstructured{cdiDataVolume("root-dv", cdi.Succeeded, "")}, wantStatus: v1.VirtualMachineStatusStopped},
		{name: "a volume naming a DataVolume of no template", vm: func() *v1.VirtualMachine {
			vm := withDataVolume(newVM(v1.RunStrategyAlways))
			vm.Spec.DataVolumeTemplates = nil
			return vm
		}(), existing: []*unstructured.Unstructured{cdiDataVolume("root-dv", cdi.Succeeded, "")}, wantVMI: true, wantStatus: v1.VirtualMachineStatusStarting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.vm, nil)
			dyn := f.withDataVolumes(tt.existing, tt.claims...)
			require.NoError(t, f.sync())
			created := createdDataVolumes(t, dyn)
			if tt.wantCreated {
				require.Len(t, created, 1)
				dv := created[0]
				assert.Equal(t, "root-dv", dv.Name)
				assert.Equal(t, map[string]string{"team": "a", "kubevirt.io/created-by": "vm-uid"}, dv.Labels)
				assert.Equal(t, map[string]string{"note": "x"}, dv.Annotations)
				assert.Equal(t, []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1", UID: "vm-uid",
					Controller: ptr.To(true)}}, dv.OwnerReferences)
				require.NotNil(t, dv.Spec.SourceRef)
				assert.Equal(t, cdi.DataVolumeSourceRef{Kind: "DataSource", Name: "fedora", Namespace: ptr.To("os-images")}, *dv.Spec.SourceRef)
				assert.Equal(t, "30Gi", dv.Spec.Storage.Resources.Requests.Storage().String())
				assert.Contains(t, f.events(), "Normal SuccessfulDataVolumeCreate Created DataVolume root-dv")
			} else {
				assert.Empty(t, created)
			}
			vmi := f.vmi()
			assert.Equal(t, tt.wantVMI, vmi != nil)
			if vmi != nil {
				assert.Equal(t, &v1.DataVolumeSource{Name: "root-dv"}, vmi.Spec.Volumes[len(vmi.Spec.Volumes)-1].DataVolume,
					"the instance names the DataVolume; its launcher pod uses the claim of that name")
			}
			assert.Equal(t, tt.wantStatus, f.vm().Status.PrintableStatus)
		})
	}
}

// TestDataVolumesWithoutCDI: where the cluster did not serve CDI when virt-controller
// started, a VM using DataVolumes (which virt-api would have refused) is not started and says
// why, rather than waiting in silence.
func TestDataVolumesWithoutCDI(t *testing.T) {
	f := newFixture(t, withDataVolume(newVM(v1.RunStrategyAlways)), nil)
	require.Error(t, f.sync())
	assert.Nil(t, f.vmi())
	vm := f.vm()
	assert.Equal(t, v1.VirtualMachineStatusDataVolumeError, vm.Status.PrintableStatus)
	var failure string
	for _, c := range vm.Status.Conditions {
		if c.Type == v1.VirtualMachineFailure {
			failure = c.Message
		}
	}
	assert.Contains(t, failure, "does not serve CDI")
}
