package controller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	"github.com/hangarvm/hangar/pkg/operator/preflight"
	"github.com/hangarvm/hangar/pkg/operator/render"
)

// rolledOut says whether every workload of a phase runs what was just applied (applied holds
// the generation each apply returned: the informers may not have seen it yet) on all its
// pods, and if not, why.
func (c *Controller) rolledOut(phase render.Phase, objs []render.Object, applied map[string]int64) (bool, string) {
	for _, o := range objs {
		if o.Phase != phase {
			continue
		}
		var ok bool
		var why string
		switch w := o.Object.(type) {
		case *appsv1.StatefulSet:
			ok, why = c.statefulSetRolled(w.Name, applied["StatefulSet/"+w.Name])
		case *appsv1.Deployment:
			ok, why = c.deploymentRolled(w.Name, applied["Deployment/"+w.Name])
		case *appsv1.DaemonSet:
			ok, why = c.daemonSetRolled(w.Name, applied["DaemonSet/"+w.Name])
		case *apiregistrationv1.APIService:
			ok, why = c.apiServiceAvailable(w.Name)
		default:
			continue
		}
		if !ok {
			return false, why
		}
	}
	return true, ""
}

func (c *Controller) statefulSetRolled(name string, generation int64) (bool, string) {
	s, err := c.statefulSets.StatefulSets(render.Namespace).Get(name)
	if err != nil {
		return false, fmt.Sprintf("StatefulSet %s: %v", name, err)
	}
	want := replicas(s.Spec.Replicas)
	switch {
	case s.Generation < generation || s.Status.ObservedGeneration < s.Generation:
		return false, fmt.Sprintf("StatefulSet %s: the change is not observed yet", name)
	case s.Status.UpdatedReplicas < want || (s.Status.UpdateRevision != "" && s.Status.CurrentRevision != s.Status.UpdateRevision):
		return false, fmt.Sprintf("StatefulSet %s: %d of %d pods updated", name, s.Status.UpdatedReplicas, want)
	case s.Status.ReadyReplicas < want:
		return false, fmt.Sprintf("StatefulSet %s: %d of %d pods ready", name, s.Status.ReadyReplicas, want)
	}
	return true, ""
}

func (c *Controller) deploymentRolled(name string, generation int64) (bool, string) {
	d, err := c.deployments.Deployments(render.Namespace).Get(name)
	if err != nil {
		return false, fmt.Sprintf("Deployment %s: %v", name, err)
	}
	want := replicas(d.Spec.Replicas)
	switch {
	case d.Generation < generation || d.Status.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("Deployment %s: the change is not observed yet", name)
	case d.Status.UpdatedReplicas < want || d.Status.Replicas > want:
		return false, fmt.Sprintf("Deployment %s: %d of %d pods updated", name, d.Status.UpdatedReplicas, want)
	case d.Status.AvailableReplicas < want:
		return false, fmt.Sprintf("Deployment %s: %d of %d pods available", name, d.Status.AvailableReplicas, want)
	}
	return true, ""
}

func (c *Controller) daemonSetRolled(name string, generation int64) (bool, string) {
	d, err := c.daemonSets.DaemonSets(render.Namespace).Get(name)
	if err != nil {
		return false, fmt.Sprintf("DaemonSet %s: %v", name, err)
	}
	want := d.Status.DesiredNumberScheduled
	switch {
	case d.Generation < generation || d.Status.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("DaemonSet %s: the change is not observed yet", name)
	case d.Status.UpdatedNumberScheduled < want:
		return false, fmt.Sprintf("DaemonSet %s: %d of %d nodes updated", name, d.Status.UpdatedNumberScheduled, want)
	case d.Status.NumberAvailable < want:
		return false, fmt.Sprintf("DaemonSet %s: %d of %d nodes available", name, d.Status.NumberAvailable, want)
	}
	return true, ""
}

func (c *Controller) apiServiceAvailable(name string) (bool, string) {
	s, err := c.apiServices.Get(name)
	if err != nil {
		return false, fmt.Sprintf("APIService %s: %v", name, err)
	}
	for _, cond := range s.Status.Conditions {
		if cond.Type == apiregistrationv1.Available {
			if cond.Status == apiregistrationv1.ConditionTrue {
				return true, ""
			}
			return false, fmt.Sprintf("APIService %s: %s", name, cond.Message)
		}
	}
	return false, fmt.Sprintf("APIService %s: not yet assessed", name)
}

// serving says whether Hangar serves: etcd has a quorum, the API is available through every
// APIService, and at least one replica of virt-controller and one handler per scheduled
// node runs. It stays true while a rollout replaces pods one at a time.
func (c *Controller) serving(spec operatorv1alpha1.HangarSpec) (bool, string) {
	etcd, err := c.statefulSets.StatefulSets(render.Namespace).Get(render.EtcdName)
	if err != nil {
		return false, "etcd is not deployed"
	}
	if quorum := etcdReplicas(spec)/2 + 1; etcd.Status.ReadyReplicas < quorum {
		return false, fmt.Sprintf("etcd: %d of %d members ready, %d needed", etcd.Status.ReadyReplicas, etcdReplicas(spec), quorum)
	}
	for _, name := range preflight.APIServices {
		if ok, why := c.apiServiceAvailable(name); !ok {
			return false, why
		}
	}
	for _, name := range []string{render.VirtAPIName, render.VirtControllerName} {
		d, err := c.deployments.Deployments(render.Namespace).Get(name)
		if err != nil || d.Status.AvailableReplicas < 1 {
			return false, name + " has no available pod"
		}
	}
	handlers, err := c.daemonSets.DaemonSets(render.Namespace).Get(render.VirtHandlerName)
	if err != nil || handlers.Status.DesiredNumberScheduled == 0 {
		return false, "virt-handler runs on no node"
	}
	if down := handlers.Status.DesiredNumberScheduled - handlers.Status.NumberAvailable; down > 1 {
		return false, fmt.Sprintf("virt-handler is unavailable on %d nodes", down)
	}
	return true, ""
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
