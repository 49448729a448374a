//go:build kube

package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	cloneclient "github.com/hangarvm/hangar/pkg/generated/clone/clientset/versioned"
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
// APIService, validated with field paths, and reachable with the aggregated roles. No
// controller acts on a clone yet, so nothing here waits for one.
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
		eventually(t, "edit creates clones", func() (bool, string) {
			_, err := editor.CloneV1beta1().VirtualMachineClones(ns).Create(ctx, second, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
	})
}
