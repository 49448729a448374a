//go:build kube

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

const (
	countVMs         corev1.ResourceName = "count/virtualmachines.kubevirt.io"
	countVMIs        corev1.ResourceName = "count/virtualmachineinstances.kubevirt.io"
	countReplicaSets corev1.ResourceName = "count/virtualmachineinstancereplicasets.kubevirt.io"
	countMigrations  corev1.ResourceName = "count/virtualmachineinstancemigrations.kubevirt.io"
)

// waitForUsed waits until the quota's status.used is want for every resource of want; the
// quota controller computes it, virt-api's admission charges creates to it.
func waitForUsed(t *testing.T, c *framework.Cluster, ns, name string, want corev1.ResourceList) {
	t.Helper()
	var got corev1.ResourceList
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		q, err := c.Kube.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = q.Status.Used
		for r, n := range want {
			if used, ok := got[r]; !ok || used.Cmp(n) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "status.used of quota %s/%s: got %v, want %v", ns, name, got, want)
}

func count(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

// TestCountQuotasThroughKubeAPIServer: object count quotas on Hangar's kinds hold as on a
// CustomResourceDefinition: virt-api's quota admission refuses the create past the quota with
// kube-apiserver's answer, and kube-controller-manager's quota controller keeps status.used
// (it counts what virt-api serves through the aggregator, and gives back what a delete frees).
func TestCountQuotasThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "tenant-a"
	createNamespace(t, c.Kube, ns)
	bindRole(t, c.Kube, ns, "alice", "edit")
	bindRole(t, c.Kube, ns, "alice", "kubevirt.io:migrate")
	alice := hangarAs(t, c, "alice").KubevirtV1()

	_, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			countVMs: count(2), countVMIs: count(2), countReplicaSets: count(1), countMigrations: count(1),
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForUsed(t, c, ns, "q", corev1.ResourceList{countVMs: count(0), countVMIs: count(0), countReplicaSets: count(0), countMigrations: count(0)})

	exceeded := func(t *testing.T, err error, r corev1.ResourceName, used int) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
		assert.Contains(t, err.Error(), fmt.Sprintf("exceeded quota: q, requested: %s=1, used: %s=%d, limited: %s=%d", r, r, used, r, used))
	}

	t.Run("VMs", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			_, err := alice.VirtualMachines(ns).Create(ctx, newVM(fmt.Sprintf("vm%d", i), v1.RunStrategyHalted), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		_, err := alice.VirtualMachines(ns).Create(ctx, newVM("vm2", v1.RunStrategyHalted), metav1.CreateOptions{})
		exceeded(t, err, countVMs, 2)
		_, err = alice.VirtualMachines(ns).Get(ctx, "vm2", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing stored: %v", err)
		waitForUsed(t, c, ns, "q", corev1.ResourceList{countVMs: count(2)})

		// A delete gives the count back: the controller sees it through the aggregator.
		require.NoError(t, alice.VirtualMachines(ns).Delete(ctx, "vm0", metav1.DeleteOptions{}))
		waitForUsed(t, c, ns, "q", corev1.ResourceList{countVMs: count(1)})
		_, err = alice.VirtualMachines(ns).Create(ctx, newVM("vm2", v1.RunStrategyHalted), metav1.CreateOptions{})
		require.NoError(t, err)
		waitForUsed(t, c, ns, "q", corev1.ResourceList{countVMs: count(2)})
	})

	t.Run("instances", func(t *testing.T) {
		for _, name := range []string{"a", "b"} {
			_, err := alice.VirtualMachineInstances(ns).Create(ctx, newVMI(name), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		_, err := alice.VirtualMachineInstances(ns).Create(ctx, newVMI("c"), metav1.CreateOptions{})
		exceeded(t, err, countVMIs, 2)
		waitForUsed(t, c, ns, "q", corev1.ResourceList{countVMIs: count(2)})
	})

	t.Run("replica sets", func(t *testing.T) {
		_, err := alice.VirtualMachineInstanceReplicaSets(ns).Create(ctx, newReplicaSet("rs0", 0), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = alice.VirtualMachineInstanceReplicaSets(ns).Create(ctx, newReplicaSet("rs1", 0), metav1.CreateOptions{})
		exceeded(t, err, countReplicaSets, 1)
		waitForUsed(t, c, ns, "q", corev1.ResourceList{countReplicaSets: count(1)})
	})

	t.Run("migrations", func(t *testing.T) {
		// The two instances above run, as far as virt-api can tell.
		for _, name := range []string{"a", "b"} {
			vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
			_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
		_, err := alice.VirtualMachineInstanceMigrations(ns).Create(ctx, newMigration("move-a", "a"), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = alice.VirtualMachineInstanceMigrations(ns).Create(ctx, newMigration("move-b", "b"), metav1.CreateOptions{})
		exceeded(t, err, countMigrations, 1)
		waitForUsed(t, c, ns, "q", corev1.ResourceList{countMigrations: count(1)})
	})

	t.Run("another namespace is not charged", func(t *testing.T) {
		createNamespace(t, c.Kube, "tenant-b")
		bindRole(t, c.Kube, "tenant-b", "alice", "edit")
		for i := 0; i < 3; i++ {
			_, err := alice.VirtualMachines("tenant-b").Create(ctx, newVM(fmt.Sprintf("vm%d", i), v1.RunStrategyHalted), metav1.CreateOptions{})
			require.NoError(t, err)
		}
	})

	// The controller's own count agrees with the charges: at its next full recount
	// (--resource-quota-sync-period) it would write what it finds; a quota created now is
	// given that count at once.
	t.Run("a new quota starts from what exists", func(t *testing.T) {
		_, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "recount"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				countVMs: count(10), countVMIs: count(10), countReplicaSets: count(10), countMigrations: count(10)}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		waitForUsed(t, c, ns, "recount", corev1.ResourceList{countVMs: count(2), countVMIs: count(2), countReplicaSets: count(1), countMigrations: count(1)})
	})
}
