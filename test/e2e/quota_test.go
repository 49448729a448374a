//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
)

// tenant binds a user to roles in ns and returns a Hangar client acting as them.
func tenant(t *testing.T, ns, user string, roles ...string) versioned.Interface {
	t.Helper()
	for _, role := range roles {
		_, err := kube.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user + "-" + strings.ReplaceAll(role, ":", "-")},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cfg := rest.CopyConfig(config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return versioned.NewForConfigOrDie(cfg)
}

// quotaUsed waits until the quota's status.used is want for each resource of want.
func quotaUsed(t *testing.T, ns, name string, want map[corev1.ResourceName]int64) {
	t.Helper()
	var used corev1.ResourceList
	waitUntil(t, 90*time.Second, fmt.Sprintf("status.used of quota %s/%s is %v", ns, name, want), func() bool {
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		used = q.Status.Used
		for r, n := range want {
			if got, ok := used[r]; !ok || got.Value() != n {
				return false
			}
		}
		return true
	})
}

// TestCountQuotas: a user with edit (and kubevirt.io:migrate) in a namespace with an object
// count quota on every Hangar kind, as in issue 31 (four Halted VMs under a quota of two were
// all stored): the create past the quota gets kube-apiserver's answer, status.used counts what
// exists, the controller's instance create is refused the same way, and oversized inline
// cloud-init data is refused with its field path.
func TestCountQuotas(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-quota")
	alice := tenant(t, ns, "e2e-alice", "edit", "kubevirt.io:migrate").KubevirtV1()
	const (
		vms, vmis               corev1.ResourceName = "count/virtualmachines.kubevirt.io", "count/virtualmachineinstances.kubevirt.io"
		replicaSets, migrations corev1.ResourceName = "count/virtualmachineinstancereplicasets.kubevirt.io", "count/virtualmachineinstancemigrations.kubevirt.io"
	)
	n := func(i int64) resource.Quantity { return *resource.NewQuantity(i, resource.DecimalSI) }
	_, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{vms: n(2), vmis: n(1), replicaSets: n(1), migrations: n(0)}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	quotaUsed(t, ns, "q", map[corev1.ResourceName]int64{vms: 0, vmis: 0, replicaSets: 0, migrations: 0})
	exceeded := func(err error, r corev1.ResourceName, used, limited int) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
		assert.Contains(t, err.Error(), fmt.Sprintf("exceeded quota: q, requested: %s=1, used: %s=%d, limited: %s=%d", r, r, used, r, limited))
	}

	// Two VMs, the first running: its instance is the one the quota allows.
	first := &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "first"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways), Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: guestSpec()}}}
	_, err = alice.VirtualMachines(ns).Create(ctx, first, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = alice.VirtualMachines(ns).Create(ctx, vm("second"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = alice.VirtualMachines(ns).Create(ctx, vm("third"), metav1.CreateOptions{})
	exceeded(err, vms, 2, 2)
	waitVMI(t, ns, "first", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	quotaUsed(t, ns, "q", map[corev1.ResourceName]int64{vms: 2, vmis: 1})

	// The controller's create of the second VM's instance is refused as the user's would be.
	out, err := virtctl(t, "-n", ns, "--as", "e2e-alice", "start", "second")
	require.NoError(t, err, out)
	waitUntil(t, 60*time.Second, "a FailedCreate event on VM second naming the quota", func() bool {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=second"})
		if err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && strings.Contains(e.Message, "exceeded quota: q") {
				return true
			}
		}
		return false
	})
	_, err = alice.VirtualMachineInstances(ns).Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "loose"}, Spec: guestSpec()}, metav1.CreateOptions{})
	exceeded(err, vmis, 1, 1)

	rs := &v1.VirtualMachineInstanceReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}, Spec: v1.VirtualMachineInstanceReplicaSetSpec{
		Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"rs": "x"}},
		Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"rs": "x"}}, Spec: guestSpec()}}}
	_, err = alice.VirtualMachineInstanceReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)
	rs.Name = "rs2"
	_, err = alice.VirtualMachineInstanceReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	exceeded(err, replicaSets, 1, 1)

	_, err = alice.VirtualMachineInstanceMigrations(ns).Create(ctx, &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "move"}, Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: "first"}}, metav1.CreateOptions{})
	exceeded(err, migrations, 0, 0)
	quotaUsed(t, ns, "q", map[corev1.ResourceName]int64{vms: 2, vmis: 1, replicaSets: 1, migrations: 0})

	// Deleting a VM gives its count back (kube-controller-manager's quota controller sees the
	// delete through the aggregator).
	require.NoError(t, alice.VirtualMachines(ns).Delete(ctx, "second", metav1.DeleteOptions{}))
	quotaUsed(t, ns, "q", map[corev1.ResourceName]int64{vms: 1})
	_, err = alice.VirtualMachines(ns).Create(ctx, vm("third"), metav1.CreateOptions{})
	require.NoError(t, err)

	// Inline user data is bounded as KubeVirt bounds it; larger data goes in a Secret.
	// (Validation answers before quota admission, as in kube-apiserver.)
	big := vm("big")
	big.Spec.Template.Spec.Volumes = []v1.Volume{{Name: "seed", VolumeSource: v1.VolumeSource{
		CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config\n" + strings.Repeat("#", 4096)}}}}
	_, err = alice.VirtualMachines(ns).Create(ctx, big, metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
	assert.Contains(t, err.Error(), "spec.template.spec.volumes[0].cloudInitNoCloud.userData: Too long: may not be more than 2048 bytes")
}
