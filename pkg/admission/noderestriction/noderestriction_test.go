package noderestriction

import (
	"context"
	corev1 "k8s.io/api/core/v1"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

var (
	agents    = NewAgents(DefaultAgent)
	handlerA  = &user.DefaultInfo{Name: DefaultAgent, Extra: map[string][]string{NodeNameExtra: {"node-a"}}}
	unbound   = &user.DefaultInfo{Name: DefaultAgent}
	twoNodes  = &user.DefaultInfo{Name: DefaultAgent, Extra: map[string][]string{NodeNameExtra: {"node-a", "node-b"}}}
	someone   = &user.DefaultInfo{Name: "system:serviceaccount:hangar:virt-controller"}
	otherWith = &user.DefaultInfo{Name: "alice", Extra: map[string][]string{NodeNameExtra: {"node-a"}}}
)

func TestNodeOf(t *testing.T) {
	for _, tt := range []struct {
		name      string
		user      user.Info
		wantNode  string
		wantAgent bool
	}{
		{"bound handler", handlerA, "node-a", true},
		{"handler without node", unbound, "", true},
		{"handler with two nodes", twoNodes, "", true},
		{"another user", someone, "", false},
		{"another user with a node", otherWith, "", false},
		{"no user", nil, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			node, agent := agents.NodeOf(tt.user)
			assert.Equal(t, tt.wantNode, node)
			assert.Equal(t, tt.wantAgent, agent)
		})
	}
	assert.Empty(t, NewAgents("").Usernames(), "an empty name is no agent")
}

func TestAuthorizer(t *testing.T) {
	z := NewAuthorizer(agents)
	attrs := func(u user.Info, verb, group, resource, sub, fieldSelector string) authorizer.AttributesRecord {
		a := authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource,
			Subresource: sub, Namespace: "ns", ResourceRequest: true}
		if fieldSelector != "" {
			sel, err := fields.ParseSelector(fieldSelector)
			require.NoError(t, err)
			a.FieldSelectorRequirements = sel.Requirements()
		}
		return a
	}
	const kv, vmis = "kubevirt.io", "virtualmachineinstances"
	for _, tt := range []struct {
		name  string
		attrs authorizer.Attributes
		want  authorizer.Decision
	}{
		{"watch of its node", attrs(handlerA, "watch", kv, vmis, "", "status.nodeName=node-a"), authorizer.DecisionNoOpinion},
		{"list of its node, == and more", attrs(handlerA, "list", kv, vmis, "", "metadata.namespace=ns,status.nodeName==node-a"), authorizer.DecisionNoOpinion},
		{"list without selector", attrs(handlerA, "list", kv, vmis, "", ""), authorizer.DecisionDeny},
		{"watch of another node", attrs(handlerA, "watch", kv, vmis, "", "status.nodeName=node-b"), authorizer.DecisionDeny},
		{"watch of migrations to its node", attrs(handlerA, "watch", kv, vmis, "", "status.migrationState.targetNode=node-a"), authorizer.DecisionNoOpinion},
		{"watch of migrations to another node", attrs(handlerA, "watch", kv, vmis, "", "status.migrationState.targetNode=node-b"), authorizer.DecisionDeny},
		{"list of every node but another", attrs(handlerA, "list", kv, vmis, "", "status.nodeName!=node-b"), authorizer.DecisionDeny},
		{"get", attrs(handlerA, "get", kv, vmis, "", ""), authorizer.DecisionDeny},
		{"update status", attrs(handlerA, "update", kv, vmis, "status", ""), authorizer.DecisionNoOpinion},
		{"patch status", attrs(handlerA, "patch", kv, vmis, "status", ""), authorizer.DecisionNoOpinion},
		{"get status", attrs(handlerA, "get", kv, vmis, "status", ""), authorizer.DecisionDeny},
		{"update", attrs(handlerA, "update", kv, vmis, "", ""), authorizer.DecisionDeny},
		{"create", attrs(handlerA, "create", kv, vmis, "", ""), authorizer.DecisionDeny},
		{"delete", attrs(handlerA, "delete", kv, vmis, "", ""), authorizer.DecisionDeny},
		{"deletecollection", attrs(handlerA, "deletecollection", kv, vmis, "", ""), authorizer.DecisionDeny},
		{"console", attrs(handlerA, "get", "subresources.kubevirt.io", vmis, "console", ""), authorizer.DecisionDeny},
		{"pause", attrs(handlerA, "update", kv, vmis, "pause", ""), authorizer.DecisionDeny},
		{"VM status", attrs(handlerA, "update", kv, "virtualmachines", "status", ""), authorizer.DecisionDeny},
		{"VM list", attrs(handlerA, "list", kv, "virtualmachines", "", "status.nodeName=node-a"), authorizer.DecisionDeny},
		{"unbound watch", attrs(unbound, "watch", kv, vmis, "", "status.nodeName=node-a"), authorizer.DecisionDeny},
		{"unbound status update", attrs(unbound, "update", kv, vmis, "status", ""), authorizer.DecisionDeny},
		{"two nodes", attrs(twoNodes, "update", kv, vmis, "status", ""), authorizer.DecisionDeny},
		{"controller: RBAC decides", attrs(someone, "update", kv, vmis, "", ""), authorizer.DecisionNoOpinion},
		{"non-resource request", authorizer.AttributesRecord{User: handlerA, Verb: "get", Path: "/apis"}, authorizer.DecisionNoOpinion},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, err := z.Authorize(context.Background(), tt.attrs)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, reason)
			if got == authorizer.DecisionDeny {
				assert.NotEmpty(t, reason, "a denial says why")
			}
		})
	}
}

func instance(node string, mutate ...func(*kubevirt.VirtualMachineInstance)) *kubevirt.VirtualMachineInstance {
	vmi := &kubevirt.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vmi", Labels: map[string]string{"app": "x"}, Finalizers: []string{"f"}},
		Status:     kubevirt.VirtualMachineInstanceStatus{NodeName: node, Phase: kubevirt.Scheduled},
	}
	for _, m := range mutate {
		m(vmi)
	}
	return vmi
}

func TestCheckStatusUpdate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		vmi     *kubevirt.VirtualMachineInstance
		old     *kubevirt.VirtualMachineInstance
		wantErr string
	}{
		{"its own node", instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Status.Phase = kubevirt.Running }), instance("node-a"), ""},
		{"nil and empty labels are the same", instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Labels = nil }),
			instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Labels = map[string]string{} }), ""},
		{"another node's instance", instance("node-a"), instance("node-b"), `is on node "node-b"`},
		{"an unscheduled instance", instance("node-a"), instance(""), "on no node yet"},
		{"move away", instance("node-b"), instance("node-a"), `may not change from "node-a" to "node-b"`},
		{"unset the node", instance(""), instance("node-a"), `may not change from "node-a" to ""`},
		{"labels", instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Labels["app"] = "y" }), instance("node-a"), "metadata.labels"},
		{"annotations", instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Annotations = map[string]string{"a": "b"} }), instance("node-a"), "metadata.annotations"},
		{"finalizers", instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Finalizers = nil }), instance("node-a"), "metadata.finalizers"},
		{"migration progress", instance("node-a", migrating(func(m *kubevirt.VirtualMachineInstanceMigrationState) { m.Completed = true })), instance("node-a", migrating()), ""},
		{"migration target address", instance("node-a", migrating(func(m *kubevirt.VirtualMachineInstanceMigrationState) { m.TargetNodeAddress = "10.0.0.66:18187" })),
			instance("node-a", migrating()), "migrationState.targetNodeAddress"},
		{"migration target node", instance("node-a", migrating(func(m *kubevirt.VirtualMachineInstanceMigrationState) { m.TargetNode = "node-evil" })),
			instance("node-a", migrating()), "migrationState.targetNode"},
		{"migration abort withdrawn", instance("node-a", migrating()),
			instance("node-a", migrating(func(m *kubevirt.VirtualMachineInstanceMigrationState) { m.AbortRequested = true })), "migrationState.abortRequested"},
		{"migration state dropped", instance("node-a"), instance("node-a", migrating()), "added or removed"},
		{"active pods", instance("node-a", func(v *kubevirt.VirtualMachineInstance) {
			v.Status.ActivePods = map[types.UID]string{"other-pod": "node-a"}
		}), instance("node-a"), "status.activePods"},
		{"owners", instance("node-a", func(v *kubevirt.VirtualMachineInstance) {
			v.OwnerReferences = []metav1.OwnerReference{{Kind: "VirtualMachine", Name: "x"}}
		}), instance("node-a"), "metadata.ownerReferences"},
		// What gates migrations is not a node agent's to decide.
		{"declare an instance migratable", instance("node-a", func(v *kubevirt.VirtualMachineInstance) {
			v.Status.Conditions = []kubevirt.VirtualMachineInstanceCondition{{Type: kubevirt.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue}}
		}), instance("node-a"), "LiveMigratable condition may not change"},
		{"flip the verdict", instance("node-a", func(v *kubevirt.VirtualMachineInstance) {
			v.Status.Conditions = []kubevirt.VirtualMachineInstanceCondition{{Type: kubevirt.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue}}
		}), instance("node-a", func(v *kubevirt.VirtualMachineInstance) {
			v.Status.Conditions = []kubevirt.VirtualMachineInstanceCondition{{Type: kubevirt.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse, Reason: "DisksNotLiveMigratable"}}
		}), "LiveMigratable condition may not change"},
		{"keep the verdict while writing other conditions", instance("node-a", func(v *kubevirt.VirtualMachineInstance) {
			v.Status.Conditions = []kubevirt.VirtualMachineInstanceCondition{{Type: kubevirt.VirtualMachineInstanceReady, Status: corev1.ConditionTrue},
				{Type: kubevirt.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse}}
		}), instance("node-a", func(v *kubevirt.VirtualMachineInstance) {
			v.Status.Conditions = []kubevirt.VirtualMachineInstanceCondition{{Type: kubevirt.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse}}
		}), ""},
		{"migration method", instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Status.MigrationMethod = kubevirt.LiveMigration }),
			instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Status.MigrationMethod = kubevirt.BlockMigration }), "status.migrationMethod"},
		{"mark for evacuation", instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Status.EvacuationNodeName = "node-a" }),
			instance("node-a"), "only cleared"},
		{"clear the mark", instance("node-a"), instance("node-a", func(v *kubevirt.VirtualMachineInstance) { v.Status.EvacuationNodeName = "node-a" }), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckStatusUpdate("node-a", tt.vmi, tt.old)
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
			}
		})
	}
}

func TestPlugin(t *testing.T) {
	p := NewPlugin(agents)
	record := func(u user.Info, op admission.Operation, resource, sub string, obj, old runtime.Object) admission.Attributes {
		return admission.NewAttributesRecord(obj, old, kubevirt.Kind("VirtualMachineInstance").WithVersion("v1"), "ns", "vmi",
			kubevirt.Resource(resource).WithVersion("v1"), sub, op, nil, false, u)
	}
	const vmis = "virtualmachineinstances"
	for _, tt := range []struct {
		name    string
		attrs   admission.Attributes
		wantErr string
	}{
		{"status of its node", record(handlerA, admission.Update, vmis, "status", instance("node-a"), instance("node-a")), ""},
		{"status of another node", record(handlerA, admission.Update, vmis, "status", instance("node-a"), instance("node-b")), `is on node "node-b"`},
		{"move", record(handlerA, admission.Update, vmis, "status", instance("node-b"), instance("node-a")), "cannot move"},
		{"main resource", record(handlerA, admission.Update, vmis, "", instance("node-a"), instance("node-a")), "may only update the status"},
		{"create", record(handlerA, admission.Create, vmis, "", instance("node-a"), nil), "may only update the status"},
		{"delete", record(handlerA, admission.Delete, vmis, "", nil, instance("node-a")), "may only update the status"},
		{"VM", record(handlerA, admission.Update, "virtualmachines", "status", nil, nil), "may only update the status"},
		{"unbound", record(unbound, admission.Update, vmis, "status", instance("node-a"), instance("node-a")), "names no node"},
		{"controller moves it", record(someone, admission.Update, vmis, "status", instance("node-b"), instance("node-a")), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(context.Background(), tt.attrs, nil)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsForbidden(err), "403: %v", err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
	for _, op := range []admission.Operation{admission.Create, admission.Update, admission.Delete, admission.Connect} {
		assert.True(t, p.Handles(op), op)
	}
}

// migrating gives an instance a migration from node-a to node-b.
func migrating(mutate ...func(*kubevirt.VirtualMachineInstanceMigrationState)) func(*kubevirt.VirtualMachineInstance) {
	return func(v *kubevirt.VirtualMachineInstance) {
		v.Status.MigrationState = &kubevirt.VirtualMachineInstanceMigrationState{
			MigrationUid: "m-1", SourceNode: "node-a", TargetNode: "node-b", TargetNodeAddress: "10.0.0.2:18187",
		}
		for _, m := range mutate {
			m(v.Status.MigrationState)
		}
	}
}
