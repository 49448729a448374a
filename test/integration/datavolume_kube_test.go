//go:build kube

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/yaml"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/manager"
	vmcontroller "github.com/hangarvm/hangar/pkg/controller/vm"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
	vmsnapshotclient "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/operator/render"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// dataVolumeCRD registers cdi.kubevirt.io/v1beta1 DataVolumes as CDI's CRD does (names,
// scope, status subresource), with a permissive schema: CDI's own schema is not needed to test
// Hangar's side, and CDI itself cannot be built here.
const dataVolumeCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: datavolumes.cdi.kubevirt.io
spec:
  group: cdi.kubevirt.io
  scope: Namespaced
  names: {kind: DataVolume, listKind: DataVolumeList, plural: datavolumes, singular: datavolume, shortNames: [dv, dvs]}
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

// manifestNamed is the VM of issue 32 (test/testdata/datavolumes/vm.yaml) with the VM and its
// DataVolume renamed.
func manifestNamed(vm, dv string) []byte {
	raw, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "test/testdata/datavolumes/vm.yaml"))
	if err != nil {
		panic(err)
	}
	m := strings.ReplaceAll(string(raw), "it1-root", dv)
	m = strings.ReplaceAll(m, "{name: it1}", "{name: "+vm+"}")
	out, err := yaml.YAMLToJSON([]byte(m))
	if err != nil {
		panic(err)
	}
	return out
}

// createRaw sends a manifest as written (JSON), strictly decoded, as user's client would.
func createRaw(ctx context.Context, client versioned.Interface, ns string, body []byte, dryRun bool) error {
	req := client.KubevirtV1().RESTClient().Post().Namespace(ns).Resource("virtualmachines").
		Param("fieldValidation", "Strict").SetHeader("Content-Type", "application/json").Body(body)
	if dryRun {
		req = req.Param("dryRun", "All")
	}
	return req.Do(ctx).Error()
}

var dataVolumesGVR = vmcontroller.DataVolumesGVR

// cdiStandIn plays CDI's part, which cannot run here: for each DataVolume it is told to fill
// (fill), it makes the DataVolume's claim (of the DataVolume's name, the size its storage asks
// for) and sets the DataVolume's phase to Succeeded, as CDI's import would once done. It is a
// test stand-in, not CDI: it imports nothing and reads no source.
type cdiStandIn struct {
	t    *testing.T
	dyn  dynamic.Interface
	kube kubernetes.Interface
	ns   string

	mu    sync.Mutex
	ready map[string]bool
}

func startCDIStandIn(t *testing.T, cfg *rest.Config, ns string) *cdiStandIn {
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	s := &cdiStandIn{t: t, dyn: dyn, kube: kube, ns: ns, ready: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			s.reconcile(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// fill lets the stand-in finish the DataVolume name.
func (s *cdiStandIn) fill(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready[name] = true
}

func (s *cdiStandIn) reconcile(ctx context.Context) {
	list, err := s.dyn.Resource(dataVolumesGVR).Namespace(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range list.Items {
		u := &list.Items[i]
		var dv cdi.DataVolume
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dv) != nil || dv.Status.Phase == cdi.Succeeded {
			continue
		}
		s.mu.Lock()
		ready := s.ready[dv.Name]
		s.mu.Unlock()
		if !ready {
			continue
		}
		size := resource.MustParse("1Gi")
		if dv.Spec.Storage != nil {
			if q, ok := dv.Spec.Storage.Resources.Requests[corev1.ResourceStorage]; ok {
				size = q
			}
		}
		_, err := s.kube.CoreV1().PersistentVolumeClaims(s.ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: dv.Name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "cdi.kubevirt.io/v1beta1",
				Kind: "DataVolume", Name: dv.Name, UID: dv.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			continue
		}
		status := map[string]any{"phase": string(cdi.Succeeded), "progress": "100.0%", "claimName": dv.Name}
		_ = unstructured.SetNestedField(u.Object, status, "status")
		_, _ = s.dyn.Resource(dataVolumesGVR).Namespace(s.ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	}
}

// runVirtController runs virt-controller's controllers in-process, as its ServiceAccount with
// the RBAC of artifacts/, as virt-controller runs them (manager.Run).
func runVirtController(t *testing.T, c *framework.Cluster) {
	t.Helper()
	cfg := asVirtController(t, c)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	kv, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	o := manager.DefaultOptions()
	o.Resync = 0
	o.OptionalAPIsInterval = time.Second
	o.Instancetypes, err = instancetypeclient.NewForConfig(cfg)
	require.NoError(t, err)
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType = runtime.ContentTypeJSON
	o.Dynamic, err = dynamic.NewForConfig(jsonCfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, kv, kube, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("virt-controller did not stop")
		}
	})
}

// TestDataVolumeFlow: the VM of issue 32 against a cluster without CDI (422 saying CDI is
// needed), then with CDI's DataVolume CRD and cdiStandIn playing CDI: the VM is accepted,
// virt-controller creates its DataVolume (owned by the VM) while the VM is halted, the VM
// waits in Provisioning once started, and when the stand-in has filled the DataVolume the
// instance is made with the DataVolume's volume and its launcher pod mounts the claim. A user
// who may write VMs but not create DataVolumes is refused with 403; one who may is not.
func TestDataVolumeFlow(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "dv-flow"
	createNamespace(t, c.Kube, ns)

	_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "vm-author"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachines"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "datavolume-author"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"cdi.kubevirt.io"}, Resources: []string{"datavolumes"},
			Verbs: []string{"get", "list", "create"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bindRole(t, c.Kube, ns, "alice", "vm-author")
	bindRole(t, c.Kube, ns, "alice", "datavolume-author")
	bindRole(t, c.Kube, ns, "mallory", "vm-author")
	alice, mallory := hangarAs(t, c, "alice"), hangarAs(t, c, "mallory")

	// The instance type and preference the manifest names.
	its, err := instancetypeclient.NewForConfig(c.Admin)
	require.NoError(t, err)
	for _, o := range render.Catalogue() {
		switch obj := o.Object.(type) {
		case *instancetypev1beta1.VirtualMachineClusterInstancetype:
			if obj.Name == "u1.medium" {
				_, err = its.InstancetypeV1beta1().VirtualMachineClusterInstancetypes().Create(ctx, obj, metav1.CreateOptions{})
				require.NoError(t, err)
			}
		case *instancetypev1beta1.VirtualMachineClusterPreference:
			if obj.Name == "fedora" {
				_, err = its.InstancetypeV1beta1().VirtualMachineClusterPreferences().Create(ctx, obj, metav1.CreateOptions{})
				require.NoError(t, err)
			}
		}
	}

	t.Run("without CDI: 422 saying CDI is needed", func(t *testing.T) {
		err := createRaw(ctx, alice, ns, manifestNamed("it1", "it1-root"), false)
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
		assert.Contains(t, err.Error(), "spec.dataVolumeTemplates[0].metadata.name")
		assert.Contains(t, err.Error(), "DataVolumes need CDI")
		_, err = alice.KubevirtV1().VirtualMachines(ns).Get(ctx, "it1", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing stored: %v", err)
	})

	t.Run("without CDI: an instance or replica set naming a DataVolume gets the same 422", func(t *testing.T) {
		onDataVolume := func(spec *v1.VirtualMachineInstanceSpec) {
			spec.Volumes[0].VolumeSource = v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: "made-elsewhere"}}
		}
		vmi := newVMI("on-dv")
		onDataVolume(&vmi.Spec)
		_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, vmi, metav1.CreateOptions{})
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
		assert.Contains(t, err.Error(), `spec.volumes[0].dataVolume.name: Invalid value: "made-elsewhere": DataVolumes need CDI`)

		rs := newReplicaSet("on-dv", 1)
		onDataVolume(&rs.Spec.Template.Spec)
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
		assert.Contains(t, err.Error(), "spec.template.spec.volumes[0].dataVolume.name")

		// A replica set stored without DataVolumes cannot be given one by an update either.
		rs, err = c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, newReplicaSet("later-dv", 0), metav1.CreateOptions{})
		require.NoError(t, err)
		onDataVolume(&rs.Spec.Template.Spec)
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Update(ctx, rs, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
		require.NoError(t, c.Hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Delete(ctx, "later-dv", metav1.DeleteOptions{}))
	})

	// virt-controller starts before CDI is installed, as it does on a cluster that installs
	// CDI later: it must notice.
	runVirtController(t, c)
	crd := filepath.Join(t.TempDir(), "datavolumes.yaml")
	require.NoError(t, os.WriteFile(crd, []byte(dataVolumeCRD), 0o600))
	text, err := c.Kubectl("apply", "-f", crd)
	require.NoError(t, err, text)
	text, err = c.Kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/datavolumes.cdi.kubevirt.io")
	require.NoError(t, err, text)
	require.Eventually(t, func() bool {
		_, err := c.Kube.Discovery().ServerResourcesForGroupVersion("cdi.kubevirt.io/v1beta1")
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "kube-apiserver serves cdi.kubevirt.io/v1beta1")
	standIn := startCDIStandIn(t, c.Admin, ns)

	t.Run("with CDI: the manifest is accepted, strictly decoded", func(t *testing.T) {
		// virt-api learns of CDI at its next discovery (a refusal is believed 10 s).
		var err error
		require.Eventually(t, func() bool {
			err = createRaw(ctx, alice, ns, manifestNamed("it1", "it1-root"), false)
			return err == nil
		}, 30*time.Second, time.Second, "last: %v", err)
		vm, err := alice.KubevirtV1().VirtualMachines(ns).Get(ctx, "it1", metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, vm.Spec.DataVolumeTemplates, 1)
		assert.Equal(t, "DataSource", vm.Spec.DataVolumeTemplates[0].Spec.SourceRef.Kind)
		assert.Equal(t, "os-images", *vm.Spec.DataVolumeTemplates[0].Spec.SourceRef.Namespace)
		assert.Equal(t, "it1-root", vm.Spec.Template.Spec.Volumes[0].DataVolume.Name)
	})

	t.Run("attack: a user who may not create DataVolumes is refused with 403", func(t *testing.T) {
		for _, dryRun := range []bool{false, true} {
			err := createRaw(ctx, mallory, ns, manifestNamed("m1", "m1-root"), dryRun)
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
			assert.Contains(t, err.Error(), `user "mallory" may not create datavolumes.cdi.kubevirt.io in namespace "dv-flow"`)
		}
		_, err := mallory.KubevirtV1().VirtualMachines(ns).Get(ctx, "m1", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing stored: %v", err)
		_, err = c.Kube.Discovery().RESTClient().Get().AbsPath("/apis/cdi.kubevirt.io/v1beta1/namespaces/dv-flow/datavolumes/m1-root").DoRaw(ctx)
		assert.True(t, apierrors.IsNotFound(err), "no DataVolume made: %v", err)
	})

	dvs := standIn.dyn.Resource(dataVolumesGVR).Namespace(ns)
	t.Run("attack: restoring or cloning a VM with DataVolume templates needs create on datavolumes", func(t *testing.T) {
		// virt-controller makes the restored or cloned VM's DataVolumes with its own rights.
		snapshots, err := vmsnapshotclient.NewForConfig(c.Admin)
		require.NoError(t, err)
		_, err = snapshots.SnapshotV1beta1().VirtualMachineSnapshots(ns).Create(ctx, &snapshotv1beta1.VirtualMachineSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "it1-snap"}, Spec: snapshotv1beta1.VirtualMachineSnapshotSpec{Source: vmRef("it1")}}, metav1.CreateOptions{})
		require.NoError(t, err)
		bindRole(t, c.Kube, ns, "dv-less", "edit")
		grantVolumeSnapshots(t, c, ns, "dv-less")
		dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		restore := &snapshotv1beta1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "it1-back"},
			Spec: snapshotv1beta1.VirtualMachineRestoreSpec{Target: vmRef("it1-restored"), VirtualMachineSnapshotName: "it1-snap"}}
		vmClone := &clonev1beta1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "it1-clone"},
			Spec: clonev1beta1.VirtualMachineCloneSpec{Source: ptr.To(vmRef("it1")), Target: ptr.To(vmRef("it1-copy"))}}
		restoreAs, cloneAs := snapshotClientAs(t, c, "dv-less"), cloneClientAs(t, c, "dv-less")
		eventually(t, "edit without datavolumes is refused both", func() (bool, string) {
			_, rerr := restoreAs.SnapshotV1beta1().VirtualMachineRestores(ns).Create(ctx, restore, dryRun)
			_, cerr := cloneAs.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, vmClone, dryRun)
			want := `user "dv-less" may not create datavolumes.cdi.kubevirt.io in namespace "dv-flow"`
			return apierrors.IsForbidden(rerr) && strings.Contains(rerr.Error(), "DataVolume templates are made again") && strings.Contains(rerr.Error(), want) &&
				apierrors.IsForbidden(cerr) && strings.Contains(cerr.Error(), want), fmt.Sprint(rerr, "; ", cerr)
		})
		bindRole(t, c.Kube, ns, "dv-less", "datavolume-author")
		eventually(t, "with create on datavolumes, both are allowed", func() (bool, string) {
			_, rerr := restoreAs.SnapshotV1beta1().VirtualMachineRestores(ns).Create(ctx, restore, dryRun)
			_, cerr := cloneAs.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, vmClone, dryRun)
			return rerr == nil && cerr == nil, fmt.Sprint(rerr, "; ", cerr)
		})
	})

	t.Run("the DataVolume is created for the halted VM, owned by it", func(t *testing.T) {
		vm, err := alice.KubevirtV1().VirtualMachines(ns).Get(ctx, "it1", metav1.GetOptions{})
		require.NoError(t, err)
		var u *unstructured.Unstructured
		require.Eventually(t, func() bool {
			u, err = dvs.Get(ctx, "it1-root", metav1.GetOptions{})
			return err == nil
		}, 30*time.Second, 200*time.Millisecond, "DataVolume it1-root: %v", err)
		var dv cdi.DataVolume
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dv))
		ref := metav1.GetControllerOf(&dv)
		require.NotNil(t, ref)
		assert.Equal(t, vm.UID, ref.UID)
		assert.Equal(t, "VirtualMachine", ref.Kind)
		assert.Equal(t, string(vm.UID), dv.Labels["kubevirt.io/created-by"])
		assert.Equal(t, "fedora", dv.Spec.SourceRef.Name)
		waitForVMStatus(t, alice, ns, "it1", v1.VirtualMachineStatusProvisioning)
	})

	t.Run("a user who may not create DataVolumes may use an existing one", func(t *testing.T) {
		vm := newVM("m2", v1.RunStrategyHalted)
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes,
			v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: "it1-root"}}})
		_, err := mallory.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err)
		vm.Spec.Template.Spec.Volumes[len(vm.Spec.Template.Spec.Volumes)-1].DataVolume.Name = "nope"
		_, err = mallory.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err), "a DataVolume that does not exist: 422, got %v", err)
	})

	t.Run("started, the VM waits for its DataVolume, then its instance uses the claim", func(t *testing.T) {
		vms := alice.KubevirtV1().VirtualMachines(ns)
		vm, err := vms.Get(ctx, "it1", metav1.GetOptions{})
		require.NoError(t, err)
		vm.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
		_, err = vms.Update(ctx, vm, metav1.UpdateOptions{})
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "it1", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no instance before the DataVolume is filled: %v", err)
		waitForVMStatus(t, alice, ns, "it1", v1.VirtualMachineStatusProvisioning)

		standIn.fill("it1-root")
		var vmi *v1.VirtualMachineInstance
		require.Eventually(t, func() bool {
			vmi, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "it1", metav1.GetOptions{})
			return err == nil
		}, 60*time.Second, 200*time.Millisecond, "instance it1: %v", err)
		assert.Equal(t, &v1.DataVolumeSource{Name: "it1-root"}, vmi.Spec.Volumes[0].DataVolume)

		var pod *corev1.Pod
		require.Eventually(t, func() bool {
			pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1.CreatedByLabel + "=" + string(vmi.UID)})
			if err != nil || len(pods.Items) == 0 {
				return false
			}
			pod = &pods.Items[0]
			return true
		}, 60*time.Second, 200*time.Millisecond, "the launcher pod of it1")
		var claim string
		for _, vol := range pod.Spec.Volumes {
			if vol.Name == "rootdisk" && vol.PersistentVolumeClaim != nil {
				claim = vol.PersistentVolumeClaim.ClaimName
			}
		}
		assert.Equal(t, "it1-root", claim, "the launcher pod mounts the DataVolume's claim")
	})
}

func waitForVMStatus(t *testing.T, client versioned.Interface, ns, name string, want v1.VirtualMachinePrintableStatus) {
	t.Helper()
	var got v1.VirtualMachinePrintableStatus
	require.Eventually(t, func() bool {
		vm, err := client.KubevirtV1().VirtualMachines(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			got = vm.Status.PrintableStatus
		}
		return got == want
	}, 30*time.Second, 200*time.Millisecond, "VM %s/%s: printableStatus %q, want %q", ns, name, got, want)
}
