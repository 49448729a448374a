//go:build kube

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// admissionPolicy makes a ValidatingAdmissionPolicy on updates of kubevirt.io resources, with
// one validation, and binds it to every namespace.
func admissionPolicy(t *testing.T, c *framework.Cluster, name string, resources []string, expression, message string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"kubevirt.io"}, APIVersions: []string{"*"}, Resources: resources},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// TestActionsRunAdmission: the start action writes the VM (its runStrategy, or a start
// request in its status) like any update, so a cluster's ValidatingAdmissionPolicies on VMs
// apply to it, as virt-api evaluates them for the user who asked: a policy that forbids
// starting VMs labelled frozen refuses `start` on them, whichever part the start writes, and
// the VM stays as it was; other VMs start.
func TestActionsRunAdmission(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "policed"
	createNamespace(t, c.Kube, ns)
	bindRole(t, c.Kube, ns, "alice", "edit")
	alice := hangarAs(t, c, "alice").KubevirtV1().VirtualMachines(ns)

	const frozen = "has(object.metadata.labels) && 'frozen' in object.metadata.labels"
	admissionPolicy(t, c, "frozen-vms-stay-off", []string{"virtualmachines"},
		"!("+frozen+") || !has(object.spec.runStrategy) || object.spec.runStrategy != 'Always'", "frozen VMs may not run")
	admissionPolicy(t, c, "frozen-vms-get-no-start-requests", []string{"virtualmachines/status"},
		"!("+frozen+") || !has(object.status.stateChangeRequests) || !object.status.stateChangeRequests.exists(r, r.action == 'Start')",
		"frozen VMs may not be asked to start")

	halted := newVM("halted", v1.RunStrategyHalted)
	halted.Labels["frozen"] = "true"
	_, err := alice.Create(ctx, halted, metav1.CreateOptions{})
	require.NoError(t, err)
	manual := newVM("manual", v1.RunStrategyManual)
	manual.Labels["frozen"] = "true"
	_, err = alice.Create(ctx, manual, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = alice.Create(ctx, newVM("thawed", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)

	// virt-api learns of the policies through its informers: a plain update shows when.
	require.Eventually(t, func() bool {
		vm, err := alice.Get(ctx, "halted", metav1.GetOptions{})
		require.NoError(t, err)
		vm.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
		_, err = alice.Update(ctx, vm, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err)
	}, 30*time.Second, 200*time.Millisecond, "the policy applies to updates")
	// And the second, on the status, which virt-api may learn of a moment later.
	require.Eventually(t, func() bool {
		vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "manual", metav1.GetOptions{})
		require.NoError(t, err)
		vm.Status.StateChangeRequests = []v1.VirtualMachineStateChangeRequest{{Action: v1.StartRequest}}
		_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).UpdateStatus(ctx, vm, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err)
	}, 30*time.Second, 200*time.Millisecond, "the policy applies to status updates")

	for _, name := range []string{"halted", "manual"} {
		before, err := alice.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		_, err = alice.Start(ctx, name, &v1.StartOptions{}, metav1.UpdateOptions{})
		require.Error(t, err, name)
		assert.True(t, apierrors.IsInvalid(err), "%s: want 422, got %v", name, err)
		assert.Contains(t, err.Error(), "ValidatingAdmissionPolicy", name)
		assert.Contains(t, err.Error(), "frozen VMs may not", name)
		after, err := alice.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "%s: nothing was written", name)
	}

	_, err = alice.Start(ctx, "thawed", &v1.StartOptions{}, metav1.UpdateOptions{})
	require.NoError(t, err)
	vm, err := alice.Get(ctx, "thawed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.RunStrategyAlways, *vm.Spec.RunStrategy, "a VM no policy forbids starts")
}
