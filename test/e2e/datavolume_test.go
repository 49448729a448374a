//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/yaml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// cdiStandInCRDs register CDI's DataVolumes and DataSources (cdi.kubevirt.io/v1beta1) with
// CDI's names, scope and status subresource but a permissive schema. They are a stand-in:
// CDI itself cannot be built here, and Hangar's side needs only the API.
const cdiStandInCRDs = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: datavolumes.cdi.kubevirt.io
  labels: {hangarvm.io/test: cdi-stand-in}
spec:
  group: cdi.kubevirt.io
  scope: Namespaced
  names: {kind: DataVolume, listKind: DataVolumeList, plural: datavolumes, singular: datavolume, shortNames: [dv, dvs]}
  versions:
  - name: v1beta1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: datasources.cdi.kubevirt.io
  labels: {hangarvm.io/test: cdi-stand-in}
spec:
  group: cdi.kubevirt.io
  scope: Namespaced
  names: {kind: DataSource, listKind: DataSourceList, plural: datasources, singular: datasource, shortNames: [das]}
  versions:
  - name: v1beta1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

var (
	dataVolumesGVR = schema.GroupVersionResource{Group: "cdi.kubevirt.io", Version: "v1beta1", Resource: "datavolumes"}
	dataSourcesGVR = schema.GroupVersionResource{Group: "cdi.kubevirt.io", Version: "v1beta1", Resource: "datasources"}
)

// TestDataVolumeTemplateVMBoots is issue 32's "done when": its VM, as KubeVirt's documentation
// writes it (the u1.medium instance type and the fedora preference that hangar-operator
// installs, a DataVolume template from a DataSource in another namespace), is accepted, and
// boots. The cluster has no CDI: cdiStandInCRDs give its API, and the test plays CDI's part
// (fillDataVolume). virt-controller, already running, notices the API, makes the DataVolume
// for the halted VM, and once it is filled starts the instance on its claim: the fedora
// preference's Secure Boot firmware boots the UEFI test disk, whose initramfs reports Secure
// Boot enforced, with the instance type's memory.
func TestDataVolumeTemplateVMBoots(t *testing.T) {
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(config)
	installCDIStandIn(t)
	images := namespace(t, "e2e-os-images")
	ns := namespace(t, "e2e-datavolume")

	// The DataSource the manifest names, and the claim it points at (CDI's golden image).
	_, err := kube.CoreV1().PersistentVolumeClaims(images).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "fedora"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = dyn.Resource(dataSourcesGVR).Namespace(images).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataSource",
		"metadata": map[string]any{"name": "fedora"},
		"spec":     map[string]any{"source": map[string]any{"pvc": map[string]any{"namespace": images, "name": "fedora"}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	raw, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "test/testdata/datavolumes/vm.yaml"))
	require.NoError(t, err)
	manifest, err := yaml.YAMLToJSON([]byte(strings.ReplaceAll(string(raw), "namespace: os-images", "namespace: "+images)))
	require.NoError(t, err)
	// virt-api believes "CDI is not served" for 10 s after it last asked.
	require.Eventually(t, func() bool {
		err = hangar.KubevirtV1().RESTClient().Post().Namespace(ns).Resource("virtualmachines").
			Param("fieldValidation", "Strict").SetHeader("Content-Type", "application/json").Body(manifest).Do(ctx).Error()
		return err == nil
	}, 60*time.Second, 2*time.Second, "the manifest is accepted once CDI's API is served: %v", err)

	// virt-controller notices CDI within its discovery interval and makes the DataVolume, owned
	// by the halted VM.
	var dv cdi.DataVolume
	require.Eventually(t, func() bool {
		u, err := dyn.Resource(dataVolumesGVR).Namespace(ns).Get(ctx, "it1-root", metav1.GetOptions{})
		return err == nil && runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dv) == nil
	}, 90*time.Second, time.Second, "virt-controller creates DataVolume it1-root")
	if owner := metav1.GetControllerOf(&dv); assert.NotNil(t, owner) {
		assert.Equal(t, "VirtualMachine", owner.Kind)
		assert.Equal(t, "it1", owner.Name)
	}
	fillDataVolume(t, dyn, &dv)

	_, err = virtctl(t, "start", "it1", "-n", ns)
	require.NoError(t, err)
	console := attach(t, ns, "it1", "console")
	console.waitFor(t, "HANGAR-GUEST-EFI secureboot=1", 300*time.Second)
	console.waitFor(t, banner, 60*time.Second)

	vmi := waitVMI(t, ns, "it1", 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	assert.Equal(t, "4Gi", vmi.Spec.Domain.Memory.Guest.String(), "u1.medium's memory")
	assert.Equal(t, &v1.DataVolumeSource{Name: "it1-root"}, vmi.Spec.Volumes[0].DataVolume)
	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	var claim string
	for _, vol := range pods[0].Spec.Volumes {
		if vol.PersistentVolumeClaim != nil && vol.Name == "rootdisk" {
			claim = vol.PersistentVolumeClaim.ClaimName
		}
	}
	assert.Equal(t, "it1-root", claim, "the launcher pod uses the DataVolume's claim")
	vm, err := hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "it1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.VirtualMachineStatusRunning, vm.Status.PrintableStatus)
}

// installCDIStandIn applies cdiStandInCRDs for the test and removes them after it (with every
// DataVolume and DataSource), as a cluster that installs and removes CDI would.
func installCDIStandIn(t *testing.T) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "cdi-stand-in.yaml")
	require.NoError(t, os.WriteFile(file, []byte(cdiStandInCRDs), 0o600))
	out, err := kubectl(t, "apply", "-f", file)
	require.NoError(t, err, out)
	t.Cleanup(func() {
		out, err := kubectl(t, "delete", "crd", "-l", "hangarvm.io/test=cdi-stand-in", "--wait=true", "--timeout=120s")
		assert.NoError(t, err, out)
	})
	out, err = kubectl(t, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/datavolumes.cdi.kubevirt.io", "crd/datasources.cdi.kubevirt.io")
	require.NoError(t, err, out)
}

// fillDataVolume plays CDI's part for a DataVolume whose sourceRef names a DataSource: the
// DataSource and the claim it points at must exist, as CDI requires; the DataVolume's claim
// (of its name and requested size, owned by it) is then written with the UEFI test disk, the
// disk the DataSource's claim would hold, and the DataVolume is marked Succeeded. It is a
// stand-in: a real CDI clones the DataSource's claim across namespaces, which is CDI's work and
// is not tested here.
func fillDataVolume(t *testing.T, dyn dynamic.Interface, dv *cdi.DataVolume) {
	t.Helper()
	ctx := context.Background()
	require.NotNil(t, dv.Spec.SourceRef, "a DataVolume from a DataSource")
	require.Equal(t, "DataSource", dv.Spec.SourceRef.Kind)
	srcNS := dv.Namespace
	if dv.Spec.SourceRef.Namespace != nil {
		srcNS = *dv.Spec.SourceRef.Namespace
	}
	u, err := dyn.Resource(dataSourcesGVR).Namespace(srcNS).Get(ctx, dv.Spec.SourceRef.Name, metav1.GetOptions{})
	require.NoError(t, err, "the DataSource")
	var ds cdi.DataSource
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ds))
	require.NotNil(t, ds.Spec.Source.PVC, "a DataSource of a claim")
	_, err = kube.CoreV1().PersistentVolumeClaims(ds.Spec.Source.PVC.Namespace).Get(ctx, ds.Spec.Source.PVC.Name, metav1.GetOptions{})
	require.NoError(t, err, "the DataSource's claim")

	size := resource.MustParse("1Gi")
	if dv.Spec.Storage != nil {
		if q, ok := dv.Spec.Storage.Resources.Requests[corev1.ResourceStorage]; ok {
			size = q
		}
	}
	_, err = kube.CoreV1().PersistentVolumeClaims(dv.Namespace).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: dv.Name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "cdi.kubevirt.io/v1beta1",
			Kind: "DataVolume", Name: dv.Name, UID: dv.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	setDataVolumeStatus(t, dyn, dv, map[string]any{"phase": string(cdi.ImportInProgress), "progress": "0.0%", "claimName": dv.Name})
	populateFrom(t, dv.Namespace, dv.Name, false, uefiGuestImage, "uefi.qcow2")
	setDataVolumeStatus(t, dyn, dv, map[string]any{"phase": string(cdi.Succeeded), "progress": "100.0%", "claimName": dv.Name})
}

func setDataVolumeStatus(t *testing.T, dyn dynamic.Interface, dv *cdi.DataVolume, status map[string]any) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		u, err := dyn.Resource(dataVolumesGVR).Namespace(dv.Namespace).Get(ctx, dv.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		if unstructured.SetNestedField(u.Object, status, "status") != nil {
			return false
		}
		_, err = dyn.Resource(dataVolumesGVR).Namespace(dv.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err == nil
	}, 30*time.Second, 500*time.Millisecond, "DataVolume %s/%s status %v", dv.Namespace, dv.Name, status["phase"])
}
