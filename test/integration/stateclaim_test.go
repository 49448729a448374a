//go:build kube

package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// persistentVM is a VM whose guest keeps its EFI variables, so it needs a state claim.
func persistentVM(name string) *v1.VirtualMachine {
	vm := newVM(name, v1.RunStrategyHalted)
	vm.Spec.Template.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{
		EFI: &v1.EFI{SecureBoot: ptr.To(false), Persistent: ptr.To(true)}}}
	return vm
}

// TestStateClaimNeedsClaimRights: virt-controller creates a VM's state claim, so virt-api
// lets a VM ask for persistent EFI variables or TPM state only when the user who writes it
// may create claims in its namespace (a SubjectAccessReview through kube-apiserver, as the
// user). The attack: a user who may write VMs but not claims asks for persistent state, on
// create, on dry run and by an update, and is refused with 403 and the field's path, unless
// the VM's claim exists already.
func TestStateClaimNeedsClaimRights(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "state-claims"
	createNamespace(t, c.Kube, ns)
	bindRole(t, c.Kube, ns, "alice", "edit") // kube's edit: VMs (aggregated) and claims
	_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "vm-author"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachines"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bindRole(t, c.Kube, ns, "mallory", "vm-author")
	alice, mallory := hangarAs(t, c, "alice").KubevirtV1().VirtualMachines(ns), hangarAs(t, c, "mallory").KubevirtV1().VirtualMachines(ns)

	efiPath := "spec.template.spec.domain.firmware.bootloader.efi.persistent"
	tpmPath := "spec.template.spec.domain.devices.tpm.persistent"
	refused := func(t *testing.T, err error, path string) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
		assert.Contains(t, err.Error(), path)
		assert.Contains(t, err.Error(), `user "mallory" may not create persistentvolumeclaims in namespace "state-claims"`)
	}

	t.Run("a user who may create claims gets persistent state", func(t *testing.T) {
		_, err := alice.Create(ctx, persistentVM("alices"), metav1.CreateOptions{})
		require.NoError(t, err)
	})
	t.Run("attack: create without claim rights", func(t *testing.T) {
		_, err := mallory.Create(ctx, persistentVM("mallorys"), metav1.CreateOptions{})
		refused(t, err, efiPath)
		_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "mallorys", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing stored, got %v", err)
	})
	t.Run("attack: dry run without claim rights", func(t *testing.T) {
		_, err := mallory.Create(ctx, persistentVM("mallorys"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		refused(t, err, efiPath)
	})
	t.Run("attack: an update that adds a persistent TPM", func(t *testing.T) {
		vm, err := mallory.Create(ctx, newVM("plain", v1.RunStrategyHalted), metav1.CreateOptions{})
		require.NoError(t, err, "no persistent state, no claim: allowed")
		vm.Spec.Template.Spec.Domain.Devices.TPM = &v1.TPMDevice{Persistent: ptr.To(true)}
		_, err = mallory.Update(ctx, vm, metav1.UpdateOptions{})
		refused(t, err, tpmPath)
	})
	t.Run("a claim made already needs no claim rights", func(t *testing.T) {
		// An admin makes the claim for mallory's VM; mallory may then ask for the state that
		// lives in it, and virt-controller has nothing to create.
		_, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "persistent-state-for-given"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Mi")}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = mallory.Create(ctx, persistentVM("given"), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = mallory.Create(ctx, persistentVM("not-given"), metav1.CreateOptions{})
		refused(t, err, efiPath)
	})
	t.Run("an update that keeps the state a permitted user asked for", func(t *testing.T) {
		vm, err := mallory.Get(ctx, "alices", metav1.GetOptions{})
		require.NoError(t, err)
		vm.Labels["touched"] = "by-mallory"
		_, err = mallory.Update(ctx, vm, metav1.UpdateOptions{})
		require.NoError(t, err, "no new claim is asked for")
	})
}
