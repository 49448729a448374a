package vmi

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// An instance on a node that stopped reporting (its kubelet, and so its node agent, gone: a
// crash, a network partition, a powered-off host) cannot be reached, and nobody can say
// whether its guest still runs. After the cluster's grace period (config
// nodeUnresponsiveGracePeriod) the instance fails with KubeVirt's reason NodeUnresponsive, so
// its VirtualMachine's run strategy takes over (Always starts it again elsewhere), and its
// launcher pods are deleted at once: their kubelet cannot confirm a graceful end. Should the
// node come back, its kubelet kills the guest, whose pod is gone.
//
// The grace period is the price of that split: a guest on a partitioned node keeps running
// until the partition heals, beside its replacement. Disks that two guests must never write
// at once (ReadWriteMany claims) need the node fenced first, as with KubeVirt.

// ReasonNodeUnresponsive is KubeVirt's reason for an instance whose node stopped reporting.
const ReasonNodeUnresponsive = "NodeUnresponsive"

// vmisByNodeIndex indexes instances by status.nodeName.
const vmisByNodeIndex = "byNode"

func indexByNode(obj any) ([]string, error) {
	vmi, ok := obj.(*v1.VirtualMachineInstance)
	if !ok || vmi.Status.NodeName == "" {
		return nil, nil
	}
	return []string{vmi.Status.NodeName}, nil
}

// enqueueNodeInstances queues the instances on a node whose readiness changed.
func (c *Controller) enqueueNodeInstances(old, cur any) {
	node, ok := cur.(*corev1.Node)
	if !ok {
		return
	}
	if o, ok := old.(*corev1.Node); ok && nodeReady(o) == nodeReady(node) {
		return
	}
	c.enqueueInstancesOn(node.Name)
}

func (c *Controller) enqueueNodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		c.enqueueInstancesOn(node.Name)
	}
}

func (c *Controller) enqueueInstancesOn(node string) {
	objs, err := c.vmiIndexer.ByIndex(vmisByNodeIndex, node)
	if err != nil {
		return
	}
	for _, obj := range objs {
		c.enqueue(obj)
	}
}

// nodeReady says whether a node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeUnresponsive says whether a node has not been Ready for the grace period, and if it is
// not Ready yet within it, how much of it is left. A node missing from the cache is not
// judged: it may be too new for the cache, and a deleted node's pods are deleted by the pod
// garbage collector, which ends their instances anyway.
func (c *Controller) nodeUnresponsive(name string) (bool, time.Duration) {
	if name == "" || c.nodeLister == nil {
		return false, 0
	}
	node, err := c.nodeLister.Get(name)
	if err != nil || nodeReady(node) {
		return false, 0
	}
	since := node.CreationTimestamp.Time
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			since = cond.LastTransitionTime.Time
		}
	}
	left := c.config.Get().NodeUnresponsiveGracePeriod - c.now().Sub(since)
	if left <= 0 {
		return true, 0
	}
	return false, left
}
