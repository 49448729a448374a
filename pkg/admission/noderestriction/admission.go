package noderestriction

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// PluginName is the admission plugin's name in virt-api's --enable-admission-plugins and
// --disable-admission-plugins (virt-api's own chain; kube-apiserver's plugin of the same name
// does the same for kubelets).
const PluginName = "NodeRestriction"

// Register adds the plugin to plugins; agents is called when virt-api builds its admission
// chain, after the flags are parsed.
func Register(plugins *admission.Plugins, agents func() Agents) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return NewPlugin(agents()), nil
	})
}

// Plugin is the validating admission plugin: of a node agent's writes it admits only status
// updates of instances that are on the agent's node, as stored, and stay there.
type Plugin struct {
	*admission.Handler
	agents Agents
}

var _ admission.ValidationInterface = &Plugin{}

// NewPlugin returns the plugin for the given node agents.
func NewPlugin(agents Agents) *Plugin {
	return &Plugin{
		Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete, admission.Connect),
		agents:  agents,
	}
}

// Validate implements admission.ValidationInterface. It runs in the storage's update, on the
// instance read from etcd (GetOldObject), for PUT and every kind of PATCH alike.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	node, agent := p.agents.NodeOf(a.GetUserInfo())
	if !agent {
		return nil
	}
	if node == "" {
		return admission.NewForbidden(a, fmt.Errorf("%s", notBound))
	}
	if a.GetResource().GroupResource() != kubevirt.Resource("virtualmachineinstances") || a.GetSubresource() != "status" || a.GetOperation() != admission.Update {
		return admission.NewForbidden(a, fmt.Errorf("the node agent of node %q may only update the status of the instances on its node", node))
	}
	old, ok := a.GetOldObject().(*kubevirt.VirtualMachineInstance)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected stored object %T", a.GetOldObject()))
	}
	vmi, ok := a.GetObject().(*kubevirt.VirtualMachineInstance)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected object %T", a.GetObject()))
	}
	if err := CheckStatusUpdate(node, vmi, old); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// CheckStatusUpdate says why the node agent of node may not write vmi's status over old, the
// instance as stored; nil if it may. The spec cannot change through the status subresource at
// all; the metadata could, so the agent must leave it as it is.
func CheckStatusUpdate(node string, vmi, old *kubevirt.VirtualMachineInstance) error {
	if on := old.Status.NodeName; on != node {
		where := fmt.Sprintf("on node %q", on)
		if on == "" {
			where = "on no node yet"
		}
		return fmt.Errorf("instance %s/%s is %s: the node agent of node %q writes the status of its own node's instances only",
			old.Namespace, old.Name, where, node)
	}
	if to := vmi.Status.NodeName; to != node {
		return fmt.Errorf("status.nodeName may not change from %q to %q: a node agent cannot move an instance to another node", node, to)
	}
	if err := checkMigrationState(vmi.Status.MigrationState, old.Status.MigrationState); err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(vmi.Status.ActivePods, old.Status.ActivePods) {
		return fmt.Errorf("status.activePods may not change: virt-controller records the launcher pods")
	}
	for _, m := range []struct {
		field string
		same  bool
	}{
		{"metadata.labels", equality.Semantic.DeepEqual(vmi.Labels, old.Labels)},
		{"metadata.annotations", equality.Semantic.DeepEqual(vmi.Annotations, old.Annotations)},
		{"metadata.finalizers", equality.Semantic.DeepEqual(vmi.Finalizers, old.Finalizers)},
		{"metadata.ownerReferences", equality.Semantic.DeepEqual(vmi.OwnerReferences, old.OwnerReferences)},
	} {
		if !m.same {
			return fmt.Errorf("%s may not change: a node agent writes an instance's status only", m.field)
		}
	}
	return checkMigrationVerdicts(vmi, old)
}

// checkMigrationState: of a migration, the node agent reports the progress only; which
// migration it is, between which nodes and pods and to which address, is virt-controller's,
// so an agent cannot steer a guest's memory to a node of its choosing.
func checkMigrationState(ms, old *kubevirt.VirtualMachineInstanceMigrationState) error {
	if ms == nil && old == nil {
		return nil
	}
	if ms == nil || old == nil {
		return fmt.Errorf("status.migrationState may not be added or removed by a node agent")
	}
	for _, f := range []struct {
		field    string
		got, was string
	}{
		{"migrationUid", string(ms.MigrationUid), string(old.MigrationUid)},
		{"sourceNode", ms.SourceNode, old.SourceNode},
		{"sourcePod", ms.SourcePod, old.SourcePod},
		{"targetNode", ms.TargetNode, old.TargetNode},
		{"targetPod", ms.TargetPod, old.TargetPod},
		{"targetNodeAddress", ms.TargetNodeAddress, old.TargetNodeAddress},
	} {
		if f.got != f.was {
			return fmt.Errorf("status.migrationState.%s may not change: virt-controller sets it", f.field)
		}
	}
	if ms.AbortRequested != old.AbortRequested {
		return fmt.Errorf("status.migrationState.abortRequested may not change: virt-controller sets it")
	}
	if !equality.Semantic.DeepEqual(ms.MigrationConfiguration, old.MigrationConfiguration) {
		return fmt.Errorf("status.migrationState.migrationConfiguration may not change: virt-controller sets it")
	}
	return nil
}
