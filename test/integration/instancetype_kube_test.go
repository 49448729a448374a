//go:build kube

package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

func instancetypesAs(t *testing.T, c *framework.Cluster, user string) instancetypeclient.Interface {
	t.Helper()
	cfg, err := c.UserConfig(user)
	require.NoError(t, err)
	client, err := instancetypeclient.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

// TestInstancetypesThroughKubeAPIServer: instancetype.kubevirt.io is registered by its
// APIService, and the roles give what KubeVirt's give: the namespace's instance types and
// preferences are edit's to write and view's to read; the cluster-wide ones are readable by
// every authenticated user and writable by neither.
func TestInstancetypesThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	admin, err := instancetypeclient.NewForConfig(c.Admin)
	require.NoError(t, err)
	_, err = admin.InstancetypeV1beta1().VirtualMachineClusterInstancetypes().Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "catalogue.small"}, Spec: instancetypeSpec(1, "2Gi")}, metav1.CreateOptions{})
	require.NoError(t, err, "the admin creates through kube-apiserver")

	t.Run("kubectl sees the group", func(t *testing.T) {
		out, err := c.Kubectl("api-resources", "--api-group=instancetype.kubevirt.io")
		require.NoError(t, err, out)
		for _, kind := range []string{"VirtualMachineInstancetype", "VirtualMachineClusterInstancetype",
			"VirtualMachinePreference", "VirtualMachineClusterPreference"} {
			assert.Contains(t, out, kind)
		}
		out, err = c.Kubectl("get", "vmcf")
		require.NoError(t, err, out)
		assert.Contains(t, out, "catalogue.small")
		out, err = c.Kubectl("explain", "virtualmachinepreference.spec.cpu.preferredCPUTopology")
		require.NoError(t, err, out)
		assert.Contains(t, strings.ToLower(out), "topology")
	})

	t.Run("RBAC", func(t *testing.T) {
		ns := "catalogue"
		createNamespace(t, c.Kube, ns)
		bindRole(t, c.Kube, ns, "it-viewer", "view")
		bindRole(t, c.Kube, ns, "it-editor", "edit")
		bindRole(t, c.Kube, ns, "it-admin", "admin")
		viewer, editor, nsAdmin, stranger := instancetypesAs(t, c, "it-viewer"), instancetypesAs(t, c, "it-editor"),
			instancetypesAs(t, c, "it-admin"), instancetypesAs(t, c, "it-stranger")

		for user, client := range map[string]instancetypeclient.Interface{"edit": editor, "admin": nsAdmin} {
			_, err := client.InstancetypeV1beta1().VirtualMachineInstancetypes(ns).Create(ctx, &instancetypev1beta1.VirtualMachineInstancetype{
				ObjectMeta: metav1.ObjectMeta{Name: "by-" + user}, Spec: instancetypeSpec(1, "1Gi")}, metav1.CreateOptions{})
			require.NoError(t, err, "%s writes the namespace's instance types", user)
			_, err = client.InstancetypeV1beta1().VirtualMachinePreferences(ns).Create(ctx, &instancetypev1beta1.VirtualMachinePreference{
				ObjectMeta: metav1.ObjectMeta{Name: "by-" + user}}, metav1.CreateOptions{})
			require.NoError(t, err, "%s writes the namespace's preferences", user)

			_, err = client.InstancetypeV1beta1().VirtualMachineClusterInstancetypes().Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
				ObjectMeta: metav1.ObjectMeta{Name: "by-" + user}, Spec: instancetypeSpec(1, "1Gi")}, metav1.CreateOptions{})
			assert.True(t, apierrors.IsForbidden(err), "%s must not create cluster instance types, got %v", user, err)
			err = client.InstancetypeV1beta1().VirtualMachineClusterInstancetypes().Delete(ctx, "catalogue.small", metav1.DeleteOptions{})
			assert.True(t, apierrors.IsForbidden(err), "%s must not delete cluster instance types, got %v", user, err)
			_, err = client.InstancetypeV1beta1().VirtualMachineClusterPreferences().Create(ctx, &instancetypev1beta1.VirtualMachineClusterPreference{
				ObjectMeta: metav1.ObjectMeta{Name: "by-" + user}}, metav1.CreateOptions{})
			assert.True(t, apierrors.IsForbidden(err), "%s must not create cluster preferences, got %v", user, err)
		}

		list, err := viewer.InstancetypeV1beta1().VirtualMachineInstancetypes(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "view reads the namespace's instance types")
		assert.Len(t, list.Items, 2)
		_, err = viewer.InstancetypeV1beta1().VirtualMachineInstancetypes(ns).Create(ctx, &instancetypev1beta1.VirtualMachineInstancetype{
			ObjectMeta: metav1.ObjectMeta{Name: "by-viewer"}, Spec: instancetypeSpec(1, "1Gi")}, metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "view must not create, got %v", err)

		for user, client := range map[string]instancetypeclient.Interface{"view": viewer, "edit": editor, "no binding": stranger} {
			cluster, err := client.InstancetypeV1beta1().VirtualMachineClusterInstancetypes().List(ctx, metav1.ListOptions{})
			require.NoError(t, err, "%s reads the cluster's instance types", user)
			require.Len(t, cluster.Items, 1)
			_, err = client.InstancetypeV1beta1().VirtualMachineClusterPreferences().List(ctx, metav1.ListOptions{})
			require.NoError(t, err, "%s reads the cluster's preferences", user)
		}
		_, err = stranger.InstancetypeV1beta1().VirtualMachineInstancetypes(ns).List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "a namespace's instance types need a binding there, got %v", err)
	})
}
