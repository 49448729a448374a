//go:build kube

package integration

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapshotclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	vsinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/snapshot"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	vmsnapshotclient "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned"
	vmsinformers "github.com/hangarvm/hangar/pkg/generated/snapshot/informers/externalversions"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// installVolumeSnapshotCRDs installs snapshot.storage.k8s.io's CRDs from the
// external-snapshotter client module go.mod pins, and waits until they are served.
func installVolumeSnapshotCRDs(t *testing.T, c *framework.Cluster) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kubernetes-csi/external-snapshotter/client/v8").Output()
	require.NoError(t, err)
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd")
	var args []string
	for _, f := range []string{"snapshot.storage.k8s.io_volumesnapshotclasses.yaml", "snapshot.storage.k8s.io_volumesnapshotcontents.yaml", "snapshot.storage.k8s.io_volumesnapshots.yaml"} {
		args = append(args, "-f", filepath.Join(dir, f))
	}
	text, err := c.Kubectl(append([]string{"apply"}, args...)...)
	require.NoError(t, err, text)
	text, err = c.Kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/volumesnapshots.snapshot.storage.k8s.io",
		"crd/volumesnapshotclasses.snapshot.storage.k8s.io", "crd/volumesnapshotcontents.snapshot.storage.k8s.io")
	require.NoError(t, err, text)
}

// asVirtController applies virt-controller's RBAC from artifacts/ and returns a client
// configuration as its ServiceAccount, for controllers run in-process.
func asVirtController(t *testing.T, c *framework.Cluster) *rest.Config {
	t.Helper()
	text, err := c.Kubectl("apply", "-f", filepath.Join(framework.RepoRoot(), "artifacts/install/rbac/virt-controller.yaml"))
	require.NoError(t, err, text)
	cfg, err := c.UserConfig("system:serviceaccount:hangar:virt-controller", "system:serviceaccounts", "system:serviceaccounts:hangar")
	require.NoError(t, err)
	return cfg
}

// runUntilCleanup starts the informer factories and runs the controller until the test ends.
func runUntilCleanup(t *testing.T, run func(ctx context.Context) error, factories ...interface{ Start(<-chan struct{}) }) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// runSnapshotController runs virt-controller's snapshot and restore controllers in-process,
// as virt-controller's service account with the RBAC of artifacts/.
func runSnapshotController(t *testing.T, c *framework.Cluster) {
	t.Helper()
	cfg := asVirtController(t, c)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	kv, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	vms, err := vmsnapshotclient.NewForConfig(cfg)
	require.NoError(t, err)
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType = runtime.ContentTypeJSON
	vs, err := snapshotclient.NewForConfig(jsonCfg)
	require.NoError(t, err)

	kvf, vmsf, vsf, kf := kvinformers.NewSharedInformerFactory(kv, 0), vmsinformers.NewSharedInformerFactory(vms, 0),
		vsinformers.NewSharedInformerFactory(vs, 0), informers.NewSharedInformerFactory(kube, 0)
	ctrl, err := snapshot.New(snapshot.Clients{KubeVirt: kv, Snapshots: vms, VolumeSnapshots: vs, Kube: kube,
		Freezer: snapshot.APIFreezer{Client: kube.Discovery().RESTClient()}}, snapshot.Informers{
		Snapshots: vmsf.Snapshot().V1beta1().VirtualMachineSnapshots(), Contents: vmsf.Snapshot().V1beta1().VirtualMachineSnapshotContents(),
		Restores: vmsf.Snapshot().V1beta1().VirtualMachineRestores(), VMs: kvf.Kubevirt().V1().VirtualMachines(),
		VMIs: kvf.Kubevirt().V1().VirtualMachineInstances(), VolumeSnapshots: vsf.Snapshot().V1().VolumeSnapshots(),
		VolumeSnapshotClasses: vsf.Snapshot().V1().VolumeSnapshotClasses(), Claims: kf.Core().V1().PersistentVolumeClaims(),
		StorageClasses: kf.Storage().V1().StorageClasses(),
	}, record.NewFakeRecorder(1000))
	require.NoError(t, err)
	runUntilCleanup(t, func(ctx context.Context) error { return ctrl.Run(ctx, 2) }, kvf, vmsf, vsf, kf)
}

// markVolumeSnapshotsReady stands in for the CSI snapshotter, which does not run here: it
// sets readyToUse on every VolumeSnapshot of the namespace, as the external-snapshotter
// controller does once the storage has cut the snapshot.
func markVolumeSnapshotsReady(t *testing.T, vs snapshotclient.Interface, ns string) int {
	t.Helper()
	ctx := context.Background()
	list, err := vs.SnapshotV1().VolumeSnapshots(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for i := range list.Items {
		s := &list.Items[i]
		now := metav1.Now()
		s.Status = &vsv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), CreationTime: &now,
			BoundVolumeSnapshotContentName: ptr.To("snapcontent-" + string(s.UID)), RestoreSize: ptr.To(resource.MustParse("1Gi"))}
		_, err := vs.SnapshotV1().VolumeSnapshots(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	return len(list.Items)
}

func snapshotClientAs(t *testing.T, c *framework.Cluster, user string) vmsnapshotclient.Interface {
	t.Helper()
	cfg, err := c.UserConfig(user)
	require.NoError(t, err)
	client, err := vmsnapshotclient.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

func claimOf(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

func vmWithClaim(name, claim string, strategy v1.VirtualMachineRunStrategy) *v1.VirtualMachine {
	return &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(strategy), Template: &v1.VirtualMachineInstanceTemplateSpec{
			Spec: v1.VirtualMachineInstanceSpec{
				Domain: v1.DomainSpec{Memory: &v1.Memory{Guest: ptr.To(resource.MustParse("128Mi"))},
					Devices: v1.Devices{Disks: []v1.Disk{{Name: "root"}}}},
				Volumes: []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
			}}}}
}

func vmRef(name string) corev1.TypedLocalObjectReference {
	return corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: name}
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: timed out; last: %s", what, last)
}

// TestSnapshotsThroughKubeAPIServer: snapshot.kubevirt.io through kube-apiserver and virt-api
// with the snapshot and restore controllers running as virt-controller, VolumeSnapshot CRDs
// installed and the test playing the CSI snapshotter.
func TestSnapshotsThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	installVolumeSnapshotCRDs(t, c)
	runSnapshotController(t, c)
	ns := "snapshots"
	createNamespace(t, c.Kube, ns)
	jsonAdmin := rest.CopyConfig(c.Admin)
	jsonAdmin.ContentType = runtime.ContentTypeJSON
	vs, err := snapshotclient.NewForConfig(jsonAdmin)
	require.NoError(t, err)
	admin, err := vmsnapshotclient.NewForConfig(c.Admin)
	require.NoError(t, err)

	_, err = c.Kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "csi-fast"}, Provisioner: "csi.example.org"}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-slow"}, Provisioner: "example.org/no-snapshots"}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = vs.SnapshotV1().VolumeSnapshotClasses().Create(ctx, &vsv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "csi-snap"},
		Driver: "csi.example.org", DeletionPolicy: vsv1.VolumeSnapshotContentDelete}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, claim := range []*corev1.PersistentVolumeClaim{claimOf("db-root", "csi-fast"), claimOf("scratch-root", "local-slow")} {
		_, err = c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, vm := range []*v1.VirtualMachine{vmWithClaim("db", "db-root", v1.RunStrategyHalted), vmWithClaim("scratch", "scratch-root", v1.RunStrategyHalted)} {
		_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	t.Run("discovery and OpenAPI", func(t *testing.T) {
		out, err := c.Kubectl("api-resources", "--api-group=snapshot.kubevirt.io", "-o", "wide")
		require.NoError(t, err, out)
		for _, want := range []string{"virtualmachinesnapshots", "vmsnapshot", "VirtualMachineSnapshot",
			"virtualmachinesnapshotcontents", "vmsnapshotcontent", "virtualmachinerestores", "vmrestore"} {
			assert.Contains(t, out, want)
		}
		out, err = c.Kubectl("explain", "virtualmachinesnapshotcontent.spec.source.virtualMachine.spec.template")
		require.NoError(t, err, out)
		out, err = c.Kubectl("explain", "virtualmachinerestore.spec.patches")
		require.NoError(t, err, out)
		assert.Contains(t, out, "JSON patch")
	})

	t.Run("virt-controller freezes and thaws through virt-api", func(t *testing.T) {
		// No guest runs here: an instance that does not exist answers 404, past RBAC (a 403)
		// and the body's decoding (a 400), so the path, the body and the rights are right.
		cfg, err := c.UserConfig("system:serviceaccount:hangar:virt-controller", "system:serviceaccounts", "system:serviceaccounts:hangar")
		require.NoError(t, err)
		kube, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		freezer := snapshot.APIFreezer{Client: kube.Discovery().RESTClient()}
		err = freezer.Freeze(ctx, ns, "ghost", 5*time.Minute)
		assert.True(t, apierrors.IsNotFound(err), "got %v", err)
		err = freezer.Unfreeze(ctx, ns, "ghost")
		assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	})

	t.Run("bad input is a 422 with field paths", func(t *testing.T) {
		_, err := admin.SnapshotV1beta1().VirtualMachineSnapshots(ns).Create(ctx, &snapshotv1beta1.VirtualMachineSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec:       snapshotv1beta1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To("apps"), Kind: "Deployment", Name: "db"}}}, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "spec.source.apiGroup")
		assert.Contains(t, err.Error(), "spec.source.kind")
		_, err = admin.SnapshotV1beta1().VirtualMachineRestores(ns).Create(ctx, &snapshotv1beta1.VirtualMachineRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec:       snapshotv1beta1.VirtualMachineRestoreSpec{Target: vmRef("db"), VirtualMachineSnapshotName: "no-such-snapshot"}}, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "spec.virtualMachineSnapshotName")
	})

	t.Run("a snapshot needs create on volumesnapshots", func(t *testing.T) {
		bindRole(t, c.Kube, ns, "snap-editor", "edit")
		editor := snapshotClientAs(t, c, "snap-editor")
		snap := &snapshotv1beta1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "by-editor"},
			Spec: snapshotv1beta1.VirtualMachineSnapshotSpec{Source: vmRef("db")}}
		_, err := editor.SnapshotV1beta1().VirtualMachineSnapshots(ns).Create(ctx, snap, metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "edit alone may not create volumesnapshots; got %v", err)
		assert.Contains(t, err.Error(), `user "snap-editor" may not create volumesnapshots.snapshot.storage.k8s.io in namespace "snapshots"`)
		assert.Contains(t, err.Error(), "spec.source")

		_, err = c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "volumesnapshots"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshots"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "snap-editor-volumesnapshots"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "volumesnapshots"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "snap-editor"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		eventually(t, "the editor may snapshot once it may create volumesnapshots", func() (bool, string) {
			_, err := editor.SnapshotV1beta1().VirtualMachineSnapshots(ns).Create(ctx, snap, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil, fmt.Sprint(err)
		})
	})

	t.Run("a restore needs create on persistentvolumeclaims", func(t *testing.T) {
		_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "restorer-without-claims"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"snapshot.kubevirt.io"}, Resources: []string{"virtualmachinerestores"}, Verbs: []string{"create"}},
				{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"update", "create"}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		bindRole(t, c.Kube, ns, "restorer", "restorer-without-claims")
		_, err = admin.SnapshotV1beta1().VirtualMachineSnapshots(ns).Create(ctx, &snapshotv1beta1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "for-rbac"},
			Spec: snapshotv1beta1.VirtualMachineSnapshotSpec{Source: vmRef("scratch")}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = snapshotClientAs(t, c, "restorer").SnapshotV1beta1().VirtualMachineRestores(ns).Create(ctx, &snapshotv1beta1.VirtualMachineRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "by-restorer"}, Spec: snapshotv1beta1.VirtualMachineRestoreSpec{Target: vmRef("scratch"), VirtualMachineSnapshotName: "for-rbac"}},
			metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "got %v", err)
		assert.Contains(t, err.Error(), `user "restorer" may not create persistentvolumeclaims in namespace "snapshots"`)

		bindRole(t, c.Kube, ns, "restore-editor", "edit")
		_, err = snapshotClientAs(t, c, "restore-editor").SnapshotV1beta1().VirtualMachineRestores(ns).Create(ctx, &snapshotv1beta1.VirtualMachineRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "by-editor"}, Spec: snapshotv1beta1.VirtualMachineRestoreSpec{Target: vmRef("scratch"), VirtualMachineSnapshotName: "for-rbac"}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		assert.NoError(t, err, "edit may create claims and update VMs")
	})

	// Its user was checked for create only (or for update only): virt-api records which,
	// whatever the client sends, and the restore controller does only that.
	t.Run("a restore records whether it creates its target or rewrites it", func(t *testing.T) {
		restores := admin.SnapshotV1beta1().VirtualMachineRestores(ns)
		marked := map[string]string{snapshotv1beta1.RestoreCreatesTargetAnnotation: "true"}
		fresh, err := restores.Create(ctx, &snapshotv1beta1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "to-fresh"},
			Spec: snapshotv1beta1.VirtualMachineRestoreSpec{Target: vmRef("fresh"), VirtualMachineSnapshotName: "for-rbac"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, "true", fresh.Annotations[snapshotv1beta1.RestoreCreatesTargetAnnotation])
		// The restore controller writes the status meanwhile: a conflict is tried again.
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if fresh, err = restores.Get(ctx, "to-fresh", metav1.GetOptions{}); err != nil {
				return err
			}
			fresh.Annotations = map[string]string{"team": "a"}
			fresh, err = restores.Update(ctx, fresh, metav1.UpdateOptions{})
			return err
		}))
		assert.Equal(t, map[string]string{"team": "a", snapshotv1beta1.RestoreCreatesTargetAnnotation: "true"}, fresh.Annotations, "no client clears it")
		require.NoError(t, restores.Delete(ctx, "to-fresh", metav1.DeleteOptions{}))

		existing, err := restores.Create(ctx, &snapshotv1beta1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "to-scratch", Annotations: marked},
			Spec: snapshotv1beta1.VirtualMachineRestoreSpec{Target: vmRef("scratch"), VirtualMachineSnapshotName: "for-rbac"}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err)
		assert.Equal(t, "false", existing.Annotations[snapshotv1beta1.RestoreCreatesTargetAnnotation], "no client sets it")
	})

	t.Run("a claim whose class has no VolumeSnapshotClass: said in the status", func(t *testing.T) {
		eventually(t, "the snapshot of scratch says why it cannot go on", func() (bool, string) {
			s, err := admin.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(ctx, "for-rbac", metav1.GetOptions{})
			if err != nil || s.Status == nil || s.Status.Error == nil {
				return false, fmt.Sprint(err)
			}
			return strings.Contains(*s.Status.Error.Message, "PersistentVolumeClaim scratch-root of StorageClass local-slow (provisioner example.org/no-snapshots) cannot be snapshotted: no VolumeSnapshotClass"),
				*s.Status.Error.Message
		})
		s, err := admin.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(ctx, "for-rbac", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, snapshotv1beta1.InProgress, s.Status.Phase, "Failed only after the failure deadline")
		text, err := c.Kubectl("get", "vmsnapshot", "-n", ns, "for-rbac")
		require.NoError(t, err, text)
		assert.Contains(t, text, "SOURCEKIND")
		assert.Contains(t, text, "no VolumeSnapshotClass has driver example.org/no-snapshots")
	})

	t.Run("snapshot, then restore to the same VM and to a new one", func(t *testing.T) {
		_, err := admin.SnapshotV1beta1().VirtualMachineSnapshots(ns).Create(ctx, &snapshotv1beta1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "before-upgrade"},
			Spec: snapshotv1beta1.VirtualMachineSnapshotSpec{Source: vmRef("db")}}, metav1.CreateOptions{})
		require.NoError(t, err)
		eventually(t, "the VolumeSnapshot is made and the VM locked", func() (bool, string) {
			list, err := vs.SnapshotV1().VolumeSnapshots(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 {
				return false, fmt.Sprint(len(list.Items), err)
			}
			vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
			return err == nil && ptr.Deref(vm.Status.SnapshotInProgress, "") == "before-upgrade", fmt.Sprint(err)
		})
		s, err := admin.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(ctx, "before-upgrade", metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotEqual(t, snapshotv1beta1.Succeeded, s.Status.Phase, "not before the storage says the snapshot is ready")
		// Meanwhile the VM neither starts (virtctl start or an edit) nor changes its volumes.
		var code int
		result := c.Hangar.Discovery().RESTClient().Put().AbsPath(
			"/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachines/db/start").Do(ctx).StatusCode(&code)
		assert.Equal(t, http.StatusUnprocessableEntity, code)
		assert.ErrorContains(t, result.Error(), `Cannot update vm running state until snapshot "before-upgrade" completes`)
		locked, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		locked.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "scratch-root"
		_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Update(ctx, locked, metav1.UpdateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.ErrorContains(t, err, `spec.template.spec.volumes: Forbidden: Cannot update vm disks or volumes until snapshot "before-upgrade" completes`)
		require.Equal(t, 1, markVolumeSnapshotsReady(t, vs, ns))
		eventually(t, "the snapshot succeeds", func() (bool, string) {
			s, err := admin.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(ctx, "before-upgrade", metav1.GetOptions{})
			if err != nil || s.Status == nil {
				return false, fmt.Sprint(err)
			}
			return s.Status.Phase == snapshotv1beta1.Succeeded && ptr.Deref(s.Status.ReadyToUse, false), string(s.Status.Phase)
		})
		s, err = admin.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(ctx, "before-upgrade", metav1.GetOptions{})
		require.NoError(t, err)
		content, err := admin.SnapshotV1beta1().VirtualMachineSnapshotContents(ns).Get(ctx, *s.Status.VirtualMachineSnapshotContentName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, vmWithClaim("db", "db-root", v1.RunStrategyHalted).Spec.Template.Spec.Volumes, content.Spec.Source.VirtualMachine.Spec.Template.Spec.Volumes)
		assert.Equal(t, "db-root", content.Spec.VolumeBackups[0].PersistentVolumeClaim.Name)
		eventually(t, "the VM is unlocked", func() (bool, string) {
			vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
			return err == nil && vm.Status.SnapshotInProgress == nil, fmt.Sprint(err)
		})

		// The VM runs (its run strategy; no instance is made here): the restore waits.
		vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		vm.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
		_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Update(ctx, vm, metav1.UpdateOptions{})
		require.NoError(t, err)
		restore, err := admin.SnapshotV1beta1().VirtualMachineRestores(ns).Create(ctx, &snapshotv1beta1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "rollback"},
			Spec: snapshotv1beta1.VirtualMachineRestoreSpec{Target: vmRef("db"), VirtualMachineSnapshotName: "before-upgrade"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		eventually(t, "the restore waits for the VM to stop", func() (bool, string) {
			r, err := admin.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, "rollback", metav1.GetOptions{})
			if err != nil || r.Status == nil {
				return false, fmt.Sprint(err)
			}
			for _, cond := range r.Status.Conditions {
				if cond.Type == snapshotv1beta1.ConditionProgressing && strings.Contains(cond.Message, "waiting for VirtualMachine db to stop: its runStrategy is Always") {
					return true, ""
				}
			}
			return false, fmt.Sprint(r.Status.Conditions)
		})
		claimName := "restore-" + string(restore.UID) + "-root"
		_, err = c.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no claim while the VM runs: %v", err)

		vm, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		vm.Spec.RunStrategy = ptr.To(v1.RunStrategyHalted)
		_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Update(ctx, vm, metav1.UpdateOptions{})
		require.NoError(t, err)
		eventually(t, "the restore completes once the VM is stopped", func() (bool, string) {
			r, err := admin.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, "rollback", metav1.GetOptions{})
			return err == nil && r.Status != nil && ptr.Deref(r.Status.Complete, false), fmt.Sprint(err)
		})
		restored, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotNil(t, restored.Spec.DataSource)
		assert.Equal(t, "VolumeSnapshot", restored.Spec.DataSource.Kind)
		assert.Equal(t, *content.Spec.VolumeBackups[0].VolumeSnapshotName, restored.Spec.DataSource.Name)
		assert.Equal(t, "csi-fast", *restored.Spec.StorageClassName)
		vm, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, claimName, vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
		assert.Nil(t, vm.Status.RestoreInProgress)
		_, err = c.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "db-root", metav1.GetOptions{})
		assert.NoError(t, err, "the old claim is left")

		// A new VM from the same snapshot; db stays as it is.
		before := vm.Spec
		_, err = admin.SnapshotV1beta1().VirtualMachineRestores(ns).Create(ctx, &snapshotv1beta1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "copy"},
			Spec: snapshotv1beta1.VirtualMachineRestoreSpec{Target: vmRef("db-copy"), VirtualMachineSnapshotName: "before-upgrade"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		eventually(t, "the new VM is made", func() (bool, string) {
			r, err := admin.SnapshotV1beta1().VirtualMachineRestores(ns).Get(ctx, "copy", metav1.GetOptions{})
			return err == nil && r.Status != nil && ptr.Deref(r.Status.Complete, false), fmt.Sprint(err)
		})
		copyVM, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db-copy", metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(copyVM.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, "restore-"))
		assert.NotEqual(t, claimName, copyVM.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
		vm, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, before, vm.Spec, "the original VM untouched")
	})
}
