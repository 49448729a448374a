package noderestriction

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// Authorizer refuses a node agent every request to virt-api's resources except listing and
// watching its own node's instances and writing instance status (which the admission plugin
// checks further). It has no opinion on anyone else, nor on what it lets through: RBAC (the
// delegated authorizer behind it) still has to allow those.
//
// Reads are restricted by the field selector because an authorizer sees no objects: a list or
// watch must select status.nodeName=<its node> (what virt-handler's informer does anyway), and
// a get, which could name any instance, is refused; the agent reads from its informer.
type Authorizer struct {
	agents Agents
}

var _ authorizer.Authorizer = Authorizer{}

// NewAuthorizer returns the authorizer for the given node agents.
func NewAuthorizer(agents Agents) Authorizer { return Authorizer{agents: agents} }

// Authorize implements authorizer.Authorizer.
func (z Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	node, agent := z.agents.NodeOf(attrs.GetUser())
	if !agent || !attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return authorizer.DecisionDeny, notBound, nil
	}
	instances := attrs.GetAPIGroup() == kubevirt.GroupName && attrs.GetResource() == "virtualmachineinstances"
	switch verb := attrs.GetVerb(); {
	case instances && attrs.GetSubresource() == "" && (verb == "list" || verb == "watch"):
		if selectsNode(attrs, node) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		return authorizer.DecisionDeny, fmt.Sprintf("the node agent of node %q may %s only the instances on its node or migrating to it: select %s=%s or %s=%s",
			node, verb, NodeNameField, node, TargetNodeField, node), nil
	case instances && attrs.GetSubresource() == "status" && (verb == "update" || verb == "patch"):
		return authorizer.DecisionNoOpinion, "", nil // the admission plugin checks the instance's node
	}
	return authorizer.DecisionDeny, fmt.Sprintf("the node agent of node %q may only list and watch the instances on its node and update their status", node), nil
}

// notBound explains why a node agent's credential without a node gets nothing.
const notBound = "a node agent must use a credential bound to its node (the ServiceAccount token of its pod, " +
	"which carries " + NodeNameExtra + "); this one names no node"

// selectsNode: the request's field selector requires status.nodeName, or
// status.migrationState.targetNode, to be node.
func selectsNode(attrs authorizer.Attributes, node string) bool {
	reqs, err := attrs.GetFieldSelector()
	if err != nil {
		return false
	}
	for _, r := range reqs {
		if (r.Field == NodeNameField || r.Field == TargetNodeField) && (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) && r.Value == node {
			return true
		}
	}
	return false
}
