// Package noderestriction limits what a node agent (virt-handler) may do through virt-api to
// the instances on its own node, as kube-apiserver's Node authorizer and NodeRestriction
// admission plugin limit kubelets: one node's compromised agent must not read or steer the
// instances of every other node.
//
// A node agent is a configured user (virt-handler's ServiceAccount). Its node is the one its
// credential is bound to: a pod's ServiceAccount token names the node the pod runs on, and
// kube-apiserver puts that name in the user's extra (authentication.kubernetes.io/node-name),
// which the aggregator forwards to virt-api with the user. The agent cannot choose it.
//
// The Authorizer lets a node agent list and watch only the instances selected by its node's
// status.nodeName and write only instance status; the admission plugin then checks, on the
// object as stored, that the instance is on the agent's node and stays there.
package noderestriction

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// DefaultAgent is virt-handler's ServiceAccount as artifacts/ deploy it.
const DefaultAgent = "system:serviceaccount:hangar:virt-handler"

// NodeNameExtra is the user extra that carries the node a ServiceAccount token is bound to.
const NodeNameExtra = serviceaccount.NodeNameKey

// NodeNameField is the instance field a node agent's lists and watches must select on...
const NodeNameField = "status.nodeName"

// TargetNodeField ...or this one: the instances migrating to its node, which it prepares to
// receive (it writes nothing of theirs until they are on its node).
const TargetNodeField = "status.migrationState.targetNode"

// Agents are the users that are node agents.
type Agents struct {
	names sets.Set[string]
}

// NewAgents returns the node agents with the given user names.
func NewAgents(usernames ...string) Agents {
	names := sets.New[string]()
	for _, n := range usernames {
		if n != "" {
			names.Insert(n)
		}
	}
	return Agents{names: names}
}

// Usernames are the node agents' user names, sorted.
func (a Agents) Usernames() []string { return sets.List(a.names) }

// NodeOf says whether u is a node agent and, when it is, the node its credential is bound to
// ("" when the credential is bound to none, or to more than one).
func (a Agents) NodeOf(u user.Info) (node string, agent bool) {
	if u == nil || !a.names.Has(u.GetName()) {
		return "", false
	}
	if nodes := u.GetExtra()[NodeNameExtra]; len(nodes) == 1 {
		return nodes[0], true
	}
	return "", true
}
