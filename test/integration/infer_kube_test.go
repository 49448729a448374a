//go:build kube

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// claimWithLabels creates a claim (never bound: nothing here provisions it) with labels.
func claimWithLabels(t *testing.T, c *framework.Cluster, ns, name string, labels map[string]string) {
	t.Helper()
	_, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// vmInferringFrom is a VM booting from claim, with its own 1Gi of memory, whose instance type
// and preference infer from the claim's volume under policy (nil: Reject).
func vmInferringFrom(name, claim string, policy *v1.InferFromVolumeFailurePolicy) *v1.VirtualMachine {
	vm := newVM(name, v1.RunStrategyHalted)
	spec := &vm.Spec.Template.Spec
	spec.Domain.Resources = v1.ResourceRequirements{}
	spec.Domain.Memory = &v1.Memory{Guest: ptr.To(resource.MustParse("1Gi"))}
	spec.Domain.Devices.Disks = []v1.Disk{{Name: "root"}}
	spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}
	vm.Spec.Instancetype = &v1.InstancetypeMatcher{InferFromVolume: "root", InferFromVolumeFailurePolicy: policy}
	vm.Spec.Preference = &v1.PreferenceMatcher{InferFromVolume: "root", InferFromVolumeFailurePolicy: policy}
	return vm
}

// dataSourceCRD registers cdi.kubevirt.io/v1beta1 DataSources as CDI's CRD does (names, scope,
// status subresource), with a permissive schema, as dataVolumeCRD does DataVolumes.
const dataSourceCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: datasources.cdi.kubevirt.io
spec:
  group: cdi.kubevirt.io
  scope: Namespaced
  names: {kind: DataSource, listKind: DataSourceList, plural: datasources, singular: datasource, shortNames: [das]}
  versions:
  - name: v1beta1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// serveCDI registers CDI's DataVolumes and DataSources and waits until kube-apiserver serves
// them (virt-api refuses DataVolume templates until discovery shows CDI).
func serveCDI(t *testing.T, c *framework.Cluster) {
	t.Helper()
	dir := t.TempDir()
	for name, crd := range map[string]string{"datavolumes": dataVolumeCRD, "datasources": dataSourceCRD} {
		file := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(file, []byte(crd), 0o600))
		out, err := c.Kubectl("apply", "-f", file)
		require.NoError(t, err, out)
		out, err = c.Kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+name+".cdi.kubevirt.io")
		require.NoError(t, err, out)
	}
	require.Eventually(t, func() bool {
		resources, err := c.Kube.Discovery().ServerResourcesForGroupVersion("cdi.kubevirt.io/v1beta1")
		return err == nil && len(resources.APIResources) >= 2
	}, 30*time.Second, 200*time.Millisecond, "kube-apiserver serves cdi.kubevirt.io/v1beta1")
}

// createDataSource creates the DataSource namespace/name with labels, made from the claim
// claimNamespace/claim.
func createDataSource(t *testing.T, dyn dynamic.Interface, namespace, name string, labels map[string]string, claimNamespace, claim string) {
	t.Helper()
	ds := &cdi.DataSource{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cdi.kubevirt.io/v1beta1", Kind: "DataSource"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec:       cdi.DataSourceSpec{Source: cdi.DataSourceSource{PVC: &cdi.DataVolumeSourcePVC{Namespace: claimNamespace, Name: claim}}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ds)
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: "cdi.kubevirt.io", Version: "v1beta1", Resource: "datasources"}
	_, err = dyn.Resource(gvr).Namespace(namespace).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// vmFromDataSource is a VM booting from a DataVolume template made from the DataSource
// namespace/name, whose instance type and preference infer from it under policy (nil: Reject).
func vmFromDataSource(vmName, namespace, name string, policy *v1.InferFromVolumeFailurePolicy) *v1.VirtualMachine {
	vm := newVM(vmName, v1.RunStrategyHalted)
	spec := &vm.Spec.Template.Spec
	spec.Domain.Resources = v1.ResourceRequirements{}
	spec.Domain.Devices.Disks = []v1.Disk{{Name: "root"}}
	spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: vmName + "-root"}}}}
	vm.Spec.DataVolumeTemplates = []v1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: vmName + "-root"},
		Spec: cdiv1beta1.DataVolumeSpec{
			SourceRef: &cdiv1beta1.DataVolumeSourceRef{Kind: cdiv1beta1.DataSourceKind, Namespace: &namespace, Name: name},
			Storage: &cdiv1beta1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}}}
	vm.Spec.Instancetype = &v1.InstancetypeMatcher{InferFromVolume: "root", InferFromVolumeFailurePolicy: policy}
	vm.Spec.Preference = &v1.PreferenceMatcher{InferFromVolume: "root", InferFromVolumeFailurePolicy: policy}
	return vm
}

// TestInferFromVolume: a VM takes its instance type and preference from the labels of the
// claim it boots from, as KubeVirt's does, through kube-apiserver with virt-api's own RBAC
// (artifacts/install/rbac). The claim is read only for a user who may get it: the attack is a
// user who may write VMs but not read claims, learning a claim's labels, or that it exists,
// from what the VM is stored with or refused with.
func TestInferFromVolume(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "infer"
	createNamespace(t, c.Kube, ns)
	admin, err := instancetypeclient.NewForConfig(c.Admin)
	require.NoError(t, err)
	_, err = admin.InstancetypeV1beta1().VirtualMachineClusterInstancetypes().Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "infer.medium"}, Spec: instancetypeSpec(2, "4Gi")}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.InstancetypeV1beta1().VirtualMachinePreferences(ns).Create(ctx, &instancetypev1beta1.VirtualMachinePreference{
		ObjectMeta: metav1.ObjectMeta{Name: "cores"},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{CPU: &instancetypev1beta1.CPUPreferences{
			PreferredCPUTopology: ptr.To(instancetypev1beta1.Cores)}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	claimWithLabels(t, c, ns, "fedora-root", map[string]string{
		"instancetype.kubevirt.io/default-instancetype":    "infer.medium",
		"instancetype.kubevirt.io/default-preference":      "cores",
		"instancetype.kubevirt.io/default-preference-kind": "VirtualMachinePreference",
	})
	claimWithLabels(t, c, ns, "plain", nil)

	bindRole(t, c.Kube, ns, "alice", "edit") // kube's edit: VMs (aggregated) and claims
	_, err = c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "vm-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachines"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bindRole(t, c.Kube, ns, "mallory", "vm-writer")
	alice, mallory := hangarAs(t, c, "alice").KubevirtV1().VirtualMachines(ns), hangarAs(t, c, "mallory").KubevirtV1().VirtualMachines(ns)

	t.Run("a labelled claim names the instance type and preference", func(t *testing.T) {
		vm := vmInferringFrom("labelled", "fedora-root", nil)
		vm.Spec.Template.Spec.Domain.Memory = nil // the instance type's
		created, err := alice.Create(ctx, vm, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, &v1.InstancetypeMatcher{Name: "infer.medium", Kind: "virtualmachineclusterinstancetype"}, created.Spec.Instancetype,
			"the label's name; no kind label: KubeVirt's cluster-wide kind")
		assert.Equal(t, &v1.PreferenceMatcher{Name: "cores", Kind: "VirtualMachinePreference"}, created.Spec.Preference)
		stored, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "labelled", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, created.Spec, stored.Spec, "stored resolved")

		raw, err := c.Hangar.KubevirtV1().RESTClient().Get().
			AbsPath("/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachines/labelled/expand-spec").DoRaw(ctx)
		require.NoError(t, err, string(raw))
		var expanded v1.VirtualMachine
		require.NoError(t, json.Unmarshal(raw, &expanded))
		domain := expanded.Spec.Template.Spec.Domain
		require.NotNil(t, domain.CPU)
		assert.Equal(t, []uint32{1, 2, 1}, []uint32{domain.CPU.Sockets, domain.CPU.Cores, domain.CPU.Threads}, "2 vCPUs as cores")
		assert.Equal(t, "4Gi", domain.Memory.Guest.String())
	})

	t.Run("Ignore: an inferred instance type takes the template's memory", func(t *testing.T) {
		created, err := alice.Create(ctx, vmInferringFrom("ignore-labelled", "fedora-root", ptr.To(v1.IgnoreInferFromVolumeFailure)), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, "infer.medium", created.Spec.Instancetype.Name)
		assert.Nil(t, created.Spec.Template.Spec.Domain.Memory, "the 1Gi would conflict with the instance type's memory")
	})

	t.Run("Reject: a claim without labels is a 422 naming the fields", func(t *testing.T) {
		_, err := alice.Create(ctx, vmInferringFrom("plain-reject", "plain", nil), metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.ElementsMatch(t, []string{"spec.instancetype.inferFromVolume", "spec.preference.inferFromVolume"}, causeFields(err))
		assert.Contains(t, err.Error(), "has no label instancetype.kubevirt.io/default-instancetype")
	})

	t.Run("Ignore: a claim without labels leaves a VM of its own memory", func(t *testing.T) {
		created, err := alice.Create(ctx, vmInferringFrom("plain-ignore", "plain", ptr.To(v1.IgnoreInferFromVolumeFailure)), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Nil(t, created.Spec.Instancetype)
		assert.Nil(t, created.Spec.Preference)
		assert.Equal(t, "1Gi", created.Spec.Template.Spec.Domain.Memory.Guest.String())
		assert.Equal(t, "q35", created.Spec.Template.Spec.Domain.Machine.Type, "defaulted as a VM of its own template")
	})

	t.Run("a missing claim: 422 under Reject, dropped under Ignore", func(t *testing.T) {
		_, err := alice.Create(ctx, vmInferringFrom("missing-reject", "missing", nil), metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "the claim missing of volume root does not exist")
		created, err := alice.Create(ctx, vmInferringFrom("missing-ignore", "missing", ptr.To(v1.IgnoreInferFromVolumeFailure)), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Nil(t, created.Spec.Instancetype)
	})

	t.Run("no such volume: 422 under either policy", func(t *testing.T) {
		vm := vmInferringFrom("no-volume", "fedora-root", ptr.To(v1.IgnoreInferFromVolumeFailure))
		vm.Spec.Instancetype.InferFromVolume = "data"
		vm.Spec.Preference = nil
		_, err := alice.Create(ctx, vm, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Equal(t, []string{"spec.instancetype.inferFromVolume"}, causeFields(err))
	})

	refused := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
		assert.Contains(t, err.Error(), "spec.instancetype.inferFromVolume")
		assert.Contains(t, err.Error(), `user "mallory" may not get persistentvolumeclaims in namespace "infer"`)
	}
	t.Run("attack: a user who may not read claims learns nothing", func(t *testing.T) {
		for _, claim := range []string{"fedora-root", "plain", "missing"} {
			for _, policy := range []*v1.InferFromVolumeFailurePolicy{nil, ptr.To(v1.IgnoreInferFromVolumeFailure)} {
				_, err := mallory.Create(ctx, vmInferringFrom("mallorys", claim, policy), metav1.CreateOptions{})
				refused(t, err) // the same answer whether the claim exists, and whatever its labels
			}
		}
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "mallorys", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing stored, got %v", err)
	})
	t.Run("attack: an update that sets inferFromVolume", func(t *testing.T) {
		vm := vmInferringFrom("mallory-plain", "fedora-root", nil)
		vm.Spec.Instancetype, vm.Spec.Preference = nil, nil
		vm, err := mallory.Create(ctx, vm, metav1.CreateOptions{})
		require.NoError(t, err, "a VM that infers nothing reads no claim")
		vm.Spec.Instancetype = &v1.InstancetypeMatcher{InferFromVolume: "root"}
		_, err = mallory.Update(ctx, vm, metav1.UpdateOptions{})
		refused(t, err)
	})

	t.Run("an update that sets inferFromVolume is resolved", func(t *testing.T) {
		vm := vmInferringFrom("later", "fedora-root", nil)
		vm.Spec.Instancetype, vm.Spec.Preference = nil, nil
		vm, err := alice.Create(ctx, vm, metav1.CreateOptions{})
		require.NoError(t, err)
		// What the instance type gives now (a VM of its own template was stored defaulted).
		vm.Spec.Template.Spec.Domain.Memory, vm.Spec.Template.Spec.Domain.CPU = nil, nil
		vm.Spec.Instancetype = &v1.InstancetypeMatcher{InferFromVolume: "root"}
		updated, err := alice.Update(ctx, vm, metav1.UpdateOptions{})
		require.NoError(t, err)
		assert.Equal(t, &v1.InstancetypeMatcher{Name: "infer.medium", Kind: "virtualmachineclusterinstancetype"}, updated.Spec.Instancetype)
		assert.Nil(t, updated.Spec.Preference)
	})

	t.Run("expand-vm-spec previews an inferring VM, as the user", func(t *testing.T) {
		vm := vmInferringFrom("preview", "fedora-root", nil)
		vm.Spec.Template.Spec.Domain.Memory = nil
		body, err := json.Marshal(vm)
		require.NoError(t, err)
		path := "/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/expand-vm-spec"
		raw, err := hangarAs(t, c, "alice").KubevirtV1().RESTClient().Put().AbsPath(path).
			SetHeader("Content-Type", "application/json").Body(body).DoRaw(ctx)
		require.NoError(t, err, string(raw))
		var expanded v1.VirtualMachine
		require.NoError(t, json.Unmarshal(raw, &expanded))
		assert.Nil(t, expanded.Spec.Instancetype)
		assert.Equal(t, "4Gi", expanded.Spec.Template.Spec.Domain.Memory.Guest.String())

		mallory := hangarAs(t, c, "mallory")
		_, err = c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "vm-previewer"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"subresources.kubevirt.io"}, Resources: []string{"expand-vm-spec"}, Verbs: []string{"update"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		bindRole(t, c.Kube, ns, "mallory", "vm-previewer") // expand-vm-spec, not claims (kube's view reads claims)
		err = mallory.KubevirtV1().RESTClient().Put().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
		refused(t, err)
	})

	t.Run("kubectl apply twice", func(t *testing.T) {
		vm := vmInferringFrom("applied", "fedora-root", nil)
		vm.APIVersion, vm.Kind = v1.SchemeGroupVersion.String(), "VirtualMachine"
		vm.Spec.Template.Spec.Domain.Memory = nil
		manifest, err := json.Marshal(vm)
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), "vm.json")
		require.NoError(t, os.WriteFile(file, manifest, 0o600))
		for _, mode := range []string{"--server-side", "--server-side=false"} {
			for i := 0; i < 2; i++ {
				out, err := c.Kubectl("-n", ns, "apply", mode, "-f", file)
				require.NoError(t, err, "%s #%d: %s", mode, i, out)
			}
		}
		applied, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "applied", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "infer.medium", applied.Spec.Instancetype.Name)
	})

	t.Run("virtctl create vm's manifests apply", func(t *testing.T) {
		dir := t.TempDir()
		for name, args := range map[string][]string{
			"by-default": {"--volume-pvc=src:fedora-root"},
			"asked-for":  {"--volume-pvc=src:fedora-root", "--infer-instancetype", "--infer-preference"},
			"unlabelled": {"--volume-pvc=src:plain"},
		} {
			code, out := runVirtctl(filepath.Join(dir, "no-kubeconfig"), nil, append([]string{"create", "vm", "--name=virtctl-" + name}, args...)...)
			require.Equal(t, 0, code, out)
			file := filepath.Join(dir, name+".yaml")
			require.NoError(t, os.WriteFile(file, []byte(out), 0o600))
			applied, err := c.Kubectl("-n", ns, "create", "-f", file)
			require.NoError(t, err, "%s\n%s", out, applied)
			vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "virtctl-"+name, metav1.GetOptions{})
			require.NoError(t, err)
			if name == "unlabelled" {
				assert.Nil(t, vm.Spec.Instancetype, "Ignore, by default")
				assert.Equal(t, "512Mi", vm.Spec.Template.Spec.Domain.Memory.Guest.String(), "virtctl's default memory")
				continue
			}
			assert.Equal(t, "infer.medium", vm.Spec.Instancetype.Name, name)
			assert.Equal(t, "cores", vm.Spec.Preference.Name, name)
			assert.Nil(t, vm.Spec.Template.Spec.Domain.Memory, name)
		}
	})

	// A DataVolume template made from a DataSource of a namespace of boot images, as KubeVirt's
	// documentation writes VMs: the DataSource's labels, else its claim's. Reading them takes
	// the user's get on each, there.
	serveCDI(t, c)
	images := "infer-os-images"
	createNamespace(t, c.Kube, images)
	dyn, err := dynamic.NewForConfig(c.Admin)
	require.NoError(t, err)
	createDataSource(t, dyn, images, "fedora", map[string]string{
		"instancetype.kubevirt.io/default-instancetype":    "infer.medium",
		"instancetype.kubevirt.io/default-preference":      "cores",
		"instancetype.kubevirt.io/default-preference-kind": "VirtualMachinePreference",
	}, images, "fedora-root")
	claimWithLabels(t, c, images, "fedora-root", map[string]string{
		"instancetype.kubevirt.io/default-instancetype": "infer.medium",
		"instancetype.kubevirt.io/default-preference":   "cores", "instancetype.kubevirt.io/default-preference-kind": "VirtualMachinePreference",
	})
	createDataSource(t, dyn, images, "unlabelled", nil, images, "fedora-root")
	_, err = c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "datasource-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"cdi.kubevirt.io"}, Resources: []string{"datasources"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "datavolume-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"cdi.kubevirt.io"}, Resources: []string{"datavolumes"}, Verbs: []string{"get", "create"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bindRole(t, c.Kube, ns, "alice", "datavolume-writer")
	bindRole(t, c.Kube, images, "alice", "datasource-reader")
	bindRole(t, c.Kube, images, "alice", "view") // the DataSources' claims
	// mallory may write VMs and DataVolumes, and read the images' claims, not their DataSources.
	bindRole(t, c.Kube, ns, "mallory", "datavolume-writer")
	bindRole(t, c.Kube, images, "mallory", "view")

	t.Run("a DataVolume template from a labelled DataSource names the instance type and preference", func(t *testing.T) {
		var created *v1.VirtualMachine
		var err error
		// virt-api learns of CDI at its next discovery (a refusal is believed 10 s).
		require.Eventually(t, func() bool {
			created, err = alice.Create(ctx, vmFromDataSource("from-datasource", images, "fedora", nil), metav1.CreateOptions{})
			return err == nil
		}, 30*time.Second, time.Second, "last: %v", err)
		assert.Equal(t, &v1.InstancetypeMatcher{Name: "infer.medium", Kind: "virtualmachineclusterinstancetype"}, created.Spec.Instancetype)
		assert.Equal(t, &v1.PreferenceMatcher{Name: "cores", Kind: "VirtualMachinePreference"}, created.Spec.Preference)
		stored, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "from-datasource", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, created.Spec.Instancetype, stored.Spec.Instancetype, "stored resolved")
		assert.Equal(t, created.Spec.Preference, stored.Spec.Preference)
		require.Len(t, stored.Spec.DataVolumeTemplates, 1, "the template kept as written")
	})

	t.Run("a DataSource without labels: its claim's", func(t *testing.T) {
		created, err := alice.Create(ctx, vmFromDataSource("from-unlabelled", images, "unlabelled", nil), metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, "infer.medium", created.Spec.Instancetype.Name)
		assert.Equal(t, "cores", created.Spec.Preference.Name)
	})

	t.Run("a missing DataSource: 422 under Reject, dropped under Ignore", func(t *testing.T) {
		_, err := alice.Create(ctx, vmFromDataSource("missing-ds", images, "nope", nil), metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "the DataSource "+images+"/nope of the DataVolume template missing-ds-root of volume root does not exist")
		vm := vmFromDataSource("missing-ds", images, "nope", ptr.To(v1.IgnoreInferFromVolumeFailure))
		vm.Spec.Template.Spec.Domain.Memory = &v1.Memory{Guest: ptr.To(resource.MustParse("1Gi"))}
		created, err := alice.Create(ctx, vm, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Nil(t, created.Spec.Instancetype)
	})

	t.Run("virtctl create vm --volume-datasource infers from the DataSource by default", func(t *testing.T) {
		dir := t.TempDir()
		code, out := runVirtctl(filepath.Join(dir, "no-kubeconfig"), nil, "create", "vm", "--name=virtctl-ds",
			"--volume-datasource=src:"+images+"/fedora,size:1Gi")
		require.Equal(t, 0, code, out)
		file := filepath.Join(dir, "vm.yaml")
		require.NoError(t, os.WriteFile(file, []byte(out), 0o600))
		created, err := c.Kubectl("-n", ns, "create", "-f", file)
		require.NoError(t, err, "%s\n%s", out, created)
		vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "virtctl-ds", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, &v1.InstancetypeMatcher{Name: "infer.medium", Kind: "virtualmachineclusterinstancetype"}, vm.Spec.Instancetype)
		assert.Equal(t, &v1.PreferenceMatcher{Name: "cores", Kind: "VirtualMachinePreference"}, vm.Spec.Preference)
		assert.Nil(t, vm.Spec.Template.Spec.Domain.Memory, "the instance type's, not virtctl's default")
	})

	t.Run("attack: a user who may not get DataSources learns nothing of them", func(t *testing.T) {
		for _, source := range []string{"fedora", "unlabelled", "nope"} {
			for _, policy := range []*v1.InferFromVolumeFailurePolicy{nil, ptr.To(v1.IgnoreInferFromVolumeFailure)} {
				_, err := mallory.Create(ctx, vmFromDataSource("mallorys-ds", images, source, policy), metav1.CreateOptions{})
				require.Error(t, err)
				assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
				assert.Contains(t, err.Error(), "spec.instancetype.inferFromVolume")
				assert.Contains(t, err.Error(), `user "mallory" may not get datasources.cdi.kubevirt.io in namespace "`+images+`"`)
			}
		}
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "mallorys-ds", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing stored, got %v", err)
	})
}
