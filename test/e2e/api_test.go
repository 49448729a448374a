//go:build e2e

package e2e

import (
	"context"
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
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// namespace creates a namespace for one test and deletes it afterwards. Every test namespace
// enforces Pod Security "restricted", as many platforms do everywhere: launcher pods must pass.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	_ = kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	require.Eventually(t, func() bool {
		_, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 200*time.Millisecond, "namespace %s from an earlier run is gone", name)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// Registered after the deletion, so it runs before it: a failed test says what its pods,
	// migrations and events were.
	recordPods(t, name)
	return name
}

// vm is a VM the controller leaves alone: Manual, with no start requested.
func vm(name string) *v1.VirtualMachine {
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineSpec{
			RunStrategy: ptr.To(v1.RunStrategyManual),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{
				Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}},
			}},
		},
	}
}

func TestAPIServicesAndKubectl(t *testing.T) {
	out, err := kubectl(t, "get", "apiservices", "v1.kubevirt.io", "v1alpha3.kubevirt.io",
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Available")].status}{"\n"}{end}`)
	require.NoError(t, err, out)
	assert.Equal(t, "v1.kubevirt.io=True\nv1alpha3.kubevirt.io=True", strings.TrimSpace(out))

	out, err = kubectl(t, "api-resources", "--api-group=kubevirt.io", "-o", "name")
	require.NoError(t, err, out)
	assert.ElementsMatch(t, []string{"virtualmachineinstancereplicasets.kubevirt.io", "virtualmachineinstances.kubevirt.io",
		"virtualmachines.kubevirt.io", "virtualmachineinstancemigrations.kubevirt.io"}, strings.Fields(out))

	out, err = kubectl(t, "get", "vms,vmis,vmirs", "-A")
	require.NoError(t, err, out)

	out, err = kubectl(t, "explain", "virtualmachine.spec.runStrategy")
	require.NoError(t, err, out)
	assert.Contains(t, out, "RerunOnFailure")
}

func TestRBAC(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-rbac")
	for user, role := range map[string]string{"e2e-viewer": "view", "e2e-editor": "edit"} {
		_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	manifest := "../integration/testdata/vm-cirros.yaml"
	out, err := kubectl(t, "-n", ns, "--as", "e2e-viewer", "create", "-f", manifest)
	require.Error(t, err, "view must not create VMs")
	assert.Contains(t, out, "forbidden")

	out, err = kubectl(t, "-n", ns, "--as", "e2e-editor", "create", "-f", manifest)
	require.NoError(t, err, out)
	out, err = kubectl(t, "-n", ns, "--as", "e2e-viewer", "get", "vm", "vm-cirros", "-o", "name")
	require.NoError(t, err, out)
	assert.Equal(t, "virtualmachine.kubevirt.io/vm-cirros", strings.TrimSpace(out))
	out, err = kubectl(t, "-n", ns, "--as", "e2e-viewer", "delete", "vm", "vm-cirros")
	require.Error(t, err, "view must not delete VMs")
	assert.Contains(t, out, "forbidden")
}

func TestGarbageCollection(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-gc")
	vms, vmis := hangar.KubevirtV1().VirtualMachines(ns), hangar.KubevirtV1().VirtualMachineInstances(ns)
	ownedVMI := func(name string) {
		owner, err := vms.Create(ctx, vm(name), metav1.CreateOptions{})
		require.NoError(t, err)
		vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, v1.SchemeGroupVersion.WithKind("VirtualMachine"))}},
			Spec: owner.Spec.Template.Spec}
		_, err = vmis.Create(ctx, vmi, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	ownedVMI("cascaded")
	out, err := kubectl(t, "-n", ns, "delete", "vm", "cascaded")
	require.NoError(t, err, out)
	// The garbage collector discovers aggregated resources on its periodic resync (30 s), so
	// on a fresh cluster this also waits for it to start watching VMs and VMIs.
	require.Eventually(t, func() bool {
		_, err := vmis.Get(ctx, "cascaded", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 90*time.Second, 500*time.Millisecond, "deleting a VM deletes its VMI")

	// The collector now watches both kinds; an orphaning delete it handled before its
	// informer delivered the new VMI would leave the VMI owned, as for any kind.
	ownedVMI("orphaned")
	time.Sleep(2 * time.Second)
	out, err = kubectl(t, "-n", ns, "delete", "vm", "orphaned", "--cascade=orphan")
	require.NoError(t, err, out)
	// The collector orphans the dependents before it lets the VM go.
	require.Eventually(t, func() bool {
		_, err := vms.Get(ctx, "orphaned", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 90*time.Second, 500*time.Millisecond, "the orphaning delete completes")
	vmi, err := vmis.Get(ctx, "orphaned", metav1.GetOptions{})
	require.NoError(t, err, "--cascade=orphan keeps the VMI")
	assert.Empty(t, vmi.OwnerReferences)
}
