//go:build kube

package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/evacuation"
)

// TestDrainStartsAnEvacuation follows a drain as far as the API half goes, with virt-controller
// under its manifest's RBAC: the eviction of a LiveMigrate VM's launcher pod is refused (429)
// and marks the instance; the evacuation controller creates a kubevirt-evacuation- migration,
// which virt-api accepts (the instance runs and the controller found it migratable).
func TestDrainStartsAnEvacuation(t *testing.T) {
	c := startCluster(t)
	require.NoError(t, c.RegisterEvictionWebhook())
	c.startController()
	ctx := context.Background()
	ns := c.namespace("drain")

	vm := newVM("web", v1.RunStrategyAlways)
	vm.Spec.Template.Spec.EvictionStrategy = ptr.To(v1.EvictionStrategyLiveMigrate)
	_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{})
	require.NoError(t, err)
	var pod corev1.Pod
	waitFor(t, wait, "a launcher pod", func() (bool, error) {
		vmi, err := c.vmi(ns, "web")
		if err != nil {
			return false, nil
		}
		pods := c.launcherPods(ns)[string(vmi.UID)]
		if len(pods) != 1 {
			return false, nil
		}
		pod = pods[0]
		return true, nil
	})
	c.bindPod(&pod, "node-a")
	waitFor(t, wait, "the instance Scheduled on node-a", func() (bool, error) {
		vmi, err := c.vmi(ns, "web")
		return err == nil && vmi.Status.Phase == v1.Scheduled && vmi.Status.NodeName == "node-a", nil
	})
	c.setPhase(ns, "web", v1.Running)
	waitFor(t, wait, "the controller to find the instance migratable", func() (bool, error) {
		vmi, err := c.vmi(ns, "web")
		if err != nil {
			return false, nil
		}
		cond := vmi.Status.Condition(v1.VirtualMachineInstanceIsMigratable)
		return cond != nil && cond.Status == corev1.ConditionTrue && vmi.Status.MigrationMethod == v1.BlockMigration, nil
	})

	err = c.Kube.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}})
	require.True(t, apierrors.IsTooManyRequests(err), "want 429, got %v", err)
	assert.Contains(t, err.Error(), `Eviction triggered evacuation of VMI "drain/web"`)

	var migration v1.VirtualMachineInstanceMigration
	waitFor(t, wait, "an evacuation migration", func() (bool, error) {
		list, err := c.Hangar.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		migration = list.Items[0]
		return true, nil
	})
	assert.True(t, strings.HasPrefix(migration.Name, evacuation.GenerateName), migration.Name)
	assert.Equal(t, "web", migration.Spec.VMIName)
	assert.Equal(t, "node-a", migration.Annotations[v1.EvacuationMigrationAnnotation])
	assert.Equal(t, "web", migration.Labels[v1.MigrationSelectorLabel])
	vmi, err := c.vmi(ns, "web")
	require.NoError(t, err)
	assert.Equal(t, "node-a", vmi.Status.EvacuationNodeName)

	// One migration at a time: the controller does not pile up more.
	list, err := c.Hangar.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)
}
