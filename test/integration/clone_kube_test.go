//go:build kube

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	vsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapshotclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	clonecontroller "github.com/hangarvm/hangar/pkg/controller/clone"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	cloneclient "github.com/hangarvm/hangar/pkg/generated/clone/clientset/versioned"
	cloneinformers "github.com/hangarvm/hangar/pkg/generated/clone/informers/externalversions"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	vmsnapshotclient "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned"
	vmsinformers "github.com/hangarvm/hangar/pkg/generated/snapshot/informers/externalversions"
	"github.com/hangarvm/hangar/test/integration/framework"
)

func cloneClientAs(t *testing.T, c *framework.Cluster, user string) cloneclient.Interface {
	t.Helper()
	cfg, err := c.UserConfig(user)
	require.NoError(t, err)
	client, err := cloneclient.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

// TestClonesThroughKubeAPIServer: clone.kubevirt.io is served by virt-api through its
// APIService, validated with field paths, reachable with the aggregated roles, and refused
// (403) to a user who could not make the clone's snapshot and VM. No controller runs here.
func TestClonesThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "clones"
	createNamespace(t, c.Kube, ns)
	admin, err := cloneclient.NewForConfig(c.Admin)
	require.NoError(t, err)

	t.Run("discovery and OpenAPI", func(t *testing.T) {
		out, err := c.Kubectl("api-resources", "--api-group=clone.kubevirt.io", "-o", "wide")
		require.NoError(t, err, out)
		for _, want := range []string{"virtualmachineclones", "vmclone", "VirtualMachineClone"} {
			assert.Contains(t, out, want)
		}
		out, err = c.Kubectl("explain", "virtualmachineclone.spec.newMacAddresses")
		require.NoError(t, err, out)
		assert.Contains(t, out, "MAC")
	})

	valid := &clonev1beta1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "db-clone"},
		Spec: clonev1beta1.VirtualMachineCloneSpec{
			Source:          &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"},
			Target:          &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db-2"},
			LabelFilters:    []string{"*", "!team"},
			NewMacAddresses: map[string]string{"default": "02:00:00:00:00:01"},
			NewSMBiosSerial: ptr.To("db-2-serial"),
			Patches:         []string{`{"op":"replace","path":"/spec/runStrategy","value":"Halted"}`},
		}}

	t.Run("a valid clone is created and listed", func(t *testing.T) {
		created, err := admin.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, valid, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, valid.Spec, created.Spec)
		assert.Empty(t, created.Status.Phase, "no controller has seen it")

		list, err := admin.CloneV1beta1().VirtualMachineClones(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		assert.Equal(t, "db-clone", list.Items[0].Name)

		out, err := c.Kubectl("-n", ns, "get", "vmclone")
		require.NoError(t, err, out)
		for _, want := range []string{"PHASE", "SOURCEVIRTUALMACHINE", "TARGETVIRTUALMACHINE", "AGE", "db-clone", "db-2"} {
			assert.Contains(t, out, want)
		}
	})

	t.Run("bad input is a 422 with field paths", func(t *testing.T) {
		_, err := admin.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, &clonev1beta1.VirtualMachineClone{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: clonev1beta1.VirtualMachineCloneSpec{
				Source:          &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: "s"},
				NewMacAddresses: map[string]string{"default": "01:00:5e:00:00:01"},
				Patches:         []string{"not json"},
			}}, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		for _, want := range []string{"spec.source.apiGroup", "spec.newMacAddresses[default]", "spec.patches[0]"} {
			assert.Contains(t, err.Error(), want)
		}
		_, err = admin.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, &clonev1beta1.VirtualMachineClone{
			ObjectMeta: metav1.ObjectMeta{Name: "no-source"}}, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "spec.source")
	})

	t.Run("the spec is immutable, the status is the subresource's", func(t *testing.T) {
		got, err := admin.CloneV1beta1().VirtualMachineClones(ns).Get(ctx, "db-clone", metav1.GetOptions{})
		require.NoError(t, err)
		changed := got.DeepCopy()
		changed.Spec.Target.Name = "db-3"
		_, err = admin.CloneV1beta1().VirtualMachineClones(ns).Update(ctx, changed, metav1.UpdateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "spec: Forbidden")

		withStatus := got.DeepCopy()
		withStatus.Status.Phase = clonev1beta1.SnapshotInProgress
		withStatus.Status.SnapshotName = ptr.To("tmp-snapshot")
		updated, err := admin.CloneV1beta1().VirtualMachineClones(ns).UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
		require.NoError(t, err)
		assert.Equal(t, clonev1beta1.SnapshotInProgress, updated.Status.Phase)
		assert.Equal(t, got.Spec, updated.Spec)
	})

	t.Run("the aggregated roles give clones", func(t *testing.T) {
		bindRole(t, c.Kube, ns, "clone-viewer", "view")
		bindRole(t, c.Kube, ns, "clone-editor", "edit")
		viewer, editor := cloneClientAs(t, c, "clone-viewer"), cloneClientAs(t, c, "clone-editor")
		eventually(t, "view lists clones", func() (bool, string) {
			_, err := viewer.CloneV1beta1().VirtualMachineClones(ns).List(ctx, metav1.ListOptions{})
			return err == nil, fmt.Sprint(err)
		})
		second := valid.DeepCopy()
		second.Name = "by-viewer"
		_, err := viewer.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, second, metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "view may not create clones; got %v", err)
		second.Name = "by-editor"
		// Kubernetes' edit role has no VolumeSnapshots: a clone of a VM, which snapshots it,
		// is refused until the editor may create them.
		eventually(t, "edit may create clones but not volumesnapshots", func() (bool, string) {
			_, err := editor.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, second, metav1.CreateOptions{})
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may not create volumesnapshots.snapshot.storage.k8s.io"), fmt.Sprint(err)
		})
		grantVolumeSnapshots(t, c, ns, "clone-editor")
		eventually(t, "edit with volumesnapshots creates clones", func() (bool, string) {
			_, err := editor.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, second, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
	})

	t.Run("a clone needs create on virtualmachines", func(t *testing.T) {
		_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cloner-without-vms"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"clone.kubevirt.io"}, Resources: []string{"virtualmachineclones"}, Verbs: []string{"create"}}}},
			metav1.CreateOptions{})
		require.NoError(t, err)
		bindRole(t, c.Kube, ns, "cloner", "cloner-without-vms")
		third := valid.DeepCopy()
		third.Name = "by-cloner"
		eventually(t, "the cloner is refused, the right named", func() (bool, string) {
			_, err := cloneClientAs(t, c, "cloner").CloneV1beta1().VirtualMachineClones(ns).Create(ctx, third, metav1.CreateOptions{})
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(),
				`a clone creates the target VirtualMachine: user "cloner" may not create virtualmachines.kubevirt.io in namespace "clones"`), fmt.Sprint(err)
		})
	})
}

// grantVolumeSnapshots lets user create VolumeSnapshots in ns.
func grantVolumeSnapshots(t *testing.T, c *framework.Cluster, ns, user string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user + "-volumesnapshots"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshots"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-volumesnapshots"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user + "-volumesnapshots"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// runCloneController runs virt-controller's clone controller in-process, as virt-controller's
// service account with the RBAC of artifacts/.
func runCloneController(t *testing.T, c *framework.Cluster) {
	t.Helper()
	cfg := asVirtController(t, c)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	kv, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	vms, err := vmsnapshotclient.NewForConfig(cfg)
	require.NoError(t, err)
	clones, err := cloneclient.NewForConfig(cfg)
	require.NoError(t, err)
	cf, kvf, vmsf, kf := cloneinformers.NewSharedInformerFactory(clones, 0), kvinformers.NewSharedInformerFactory(kv, 0),
		vmsinformers.NewSharedInformerFactory(vms, 0), informers.NewSharedInformerFactory(kube, 0)
	ctrl, err := clonecontroller.New(clonecontroller.Clients{Clones: clones, Snapshots: vms}, clonecontroller.Informers{
		Clones: cf.Clone().V1beta1().VirtualMachineClones(), VMs: kvf.Kubevirt().V1().VirtualMachines(),
		Snapshots: vmsf.Snapshot().V1beta1().VirtualMachineSnapshots(), Contents: vmsf.Snapshot().V1beta1().VirtualMachineSnapshotContents(),
		Restores: vmsf.Snapshot().V1beta1().VirtualMachineRestores(), Claims: kf.Core().V1().PersistentVolumeClaims(),
	}, record.NewFakeRecorder(1000))
	require.NoError(t, err)
	runUntilCleanup(t, func(ctx context.Context) error { return ctrl.Run(ctx, 2) }, cf, kvf, vmsf, kf)
}

// TestCloneControllerThroughKubeAPIServer: a clone of a VM with a claim, made by the clone,
// snapshot and restore controllers running as virt-controller, the test playing the CSI
// snapshotter and the claims' binding: the target has the clone's MACs and serial, no fixed
// UUID (its own is made from its name), the filtered labels; the clone succeeds and its
// snapshot and restore go.
func TestCloneControllerThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	installVolumeSnapshotCRDs(t, c)
	runSnapshotController(t, c)
	runCloneController(t, c)
	ns := "cloning"
	createNamespace(t, c.Kube, ns)
	jsonAdmin := rest.CopyConfig(c.Admin)
	jsonAdmin.ContentType = runtime.ContentTypeJSON
	vs, err := snapshotclient.NewForConfig(jsonAdmin)
	require.NoError(t, err)
	admin, err := cloneclient.NewForConfig(c.Admin)
	require.NoError(t, err)
	snapshots, err := vmsnapshotclient.NewForConfig(c.Admin)
	require.NoError(t, err)

	_, err = c.Kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "csi-fast"}, Provisioner: "csi.example.org"}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = vs.SnapshotV1().VolumeSnapshotClasses().Create(ctx, &vsv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "csi-snap"},
		Driver: "csi.example.org", DeletionPolicy: vsv1.VolumeSnapshotContentDelete}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claimOf("db-root", "csi-fast"), metav1.CreateOptions{})
	require.NoError(t, err)
	source := vmWithClaim("db", "db-root", v1.RunStrategyHalted)
	source.Labels["team"] = "ops"
	source.Spec.Template.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default", MacAddress: "02:00:00:00:00:01",
		InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}}
	source.Spec.Template.Spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
	source.Spec.Template.Spec.Domain.Firmware = &v1.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223", Serial: "db-serial"}
	_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, source, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = admin.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, &clonev1beta1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "copy"},
		Spec: clonev1beta1.VirtualMachineCloneSpec{
			Source:          &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"},
			Target:          &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db-copy"},
			LabelFilters:    []string{"*", "!team"},
			NewMacAddresses: map[string]string{"default": "02:00:00:00:aa:01"},
			NewSMBiosSerial: ptr.To("db-copy-serial"),
		}}, metav1.CreateOptions{})
	require.NoError(t, err)

	var snapshotName string
	eventually(t, "the clone's snapshot taken, then restored into db-copy", func() (bool, string) {
		markVolumeSnapshotsReady(t, vs, ns)
		cl, err := admin.CloneV1beta1().VirtualMachineClones(ns).Get(ctx, "copy", metav1.GetOptions{})
		require.NoError(t, err)
		if cl.Status.SnapshotName != nil {
			snapshotName = *cl.Status.SnapshotName
		}
		_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db-copy", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("%+v", cl.Status)
	})
	assert.Regexp(t, `^clone-copy-snapshot-db-[a-z0-9]{5}$`, snapshotName)
	target, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db-copy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "02:00:00:00:aa:01", target.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress)
	require.NotNil(t, target.Spec.Template.Spec.Domain.Firmware)
	assert.Equal(t, "db-copy-serial", target.Spec.Template.Spec.Domain.Firmware.Serial)
	assert.Empty(t, target.Spec.Template.Spec.Domain.Firmware.UUID, "no fixed UUID: the new VM's is made from its name")
	assert.Equal(t, map[string]string{"app": "db"}, target.Labels, "team filtered out")
	claimName := target.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName
	assert.NotEqual(t, "db-root", claimName, "the target has its own claim")
	original, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "02:00:00:00:00:01", original.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress, "the source untouched")

	eventually(t, "the clone Succeeded", func() (bool, string) {
		cl, err := admin.CloneV1beta1().VirtualMachineClones(ns).Get(ctx, "copy", metav1.GetOptions{})
		require.NoError(t, err)
		return cl.Status.Phase == clonev1beta1.Succeeded, fmt.Sprintf("%+v", cl.Status)
	})
	// The storage binds the restored claim; the clone then deletes its snapshot and restore.
	claim, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
	require.NoError(t, err)
	claim.Status.Phase = corev1.ClaimBound
	_, err = c.Kube.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "the snapshot and restore cleaned up", func() (bool, string) {
		cl, err := admin.CloneV1beta1().VirtualMachineClones(ns).Get(ctx, "copy", metav1.GetOptions{})
		require.NoError(t, err)
		_, err = snapshots.SnapshotV1beta1().VirtualMachineSnapshots(ns).Get(ctx, snapshotName, metav1.GetOptions{})
		return cl.Status.SnapshotName == nil && cl.Status.RestoreName == nil && apierrors.IsNotFound(err), fmt.Sprintf("%+v; snapshot: %v", cl.Status, err)
	})
	cl, err := admin.CloneV1beta1().VirtualMachineClones(ns).Get(ctx, "copy", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "db-copy", ptr.Deref(cl.Status.TargetName, ""))
	var ready string
	for _, cond := range cl.Status.Conditions {
		if cond.Type == "Ready" {
			ready = string(cond.Status)
		}
	}
	assert.Equal(t, "True", ready)

	t.Run("a clone onto a taken name fails, saying why", func(t *testing.T) {
		_, err := admin.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, &clonev1beta1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "onto-copy"},
			Spec: clonev1beta1.VirtualMachineCloneSpec{
				Source: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"},
				Target: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db-copy"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		eventually(t, "Failed", func() (bool, string) {
			cl, err := admin.CloneV1beta1().VirtualMachineClones(ns).Get(ctx, "onto-copy", metav1.GetOptions{})
			require.NoError(t, err)
			return cl.Status.Phase == clonev1beta1.Failed, fmt.Sprintf("%+v", cl.Status)
		})
	})

	t.Run("a clone of a VM that does not exist waits, saying so", func(t *testing.T) {
		created, err := admin.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, &clonev1beta1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "of-ghost"},
			Spec: clonev1beta1.VirtualMachineCloneSpec{
				Source: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "ghost"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Regexp(t, `^clone-ghost-[a-z0-9]{5}$`, created.Spec.Target.Name, "virt-api names the target")
		eventually(t, "pending", func() (bool, string) {
			cl, err := admin.CloneV1beta1().VirtualMachineClones(ns).Get(ctx, "of-ghost", metav1.GetOptions{})
			require.NoError(t, err)
			for _, cond := range cl.Status.Conditions {
				if cond.Type == "Ready" && strings.Contains(cond.Message, "VirtualMachine cloning/ghost") {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", cl.Status)
		})
	})
}
