// Package replicaset is the VirtualMachineInstanceReplicaSet controller: it keeps spec.replicas
// instances matching the set's selector, adopting and releasing instances as their labels
// change, and reports replicas, readyReplicas and the selector for the scale subresource.
package replicaset

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/controller/expectations"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
)

// Controller is the VirtualMachineInstanceReplicaSet controller.
type Controller struct {
	kubevirt versioned.Interface

	rsLister  kvlisters.VirtualMachineInstanceReplicaSetLister
	vmiLister kvlisters.VirtualMachineInstanceLister
	synced    []cache.InformerSynced

	recorder     record.EventRecorder
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *expectations.Expectations // by set key
	// burst caps the creations or deletions of one sync (KubeVirt's BurstReplicas).
	burst int
}

// DefaultBurst is how many instances one sync creates or deletes at most.
const DefaultBurst = 250

// New wires the controller to its informers.
func New(kubevirt versioned.Interface, rsInformer kvinformers.VirtualMachineInstanceReplicaSetInformer,
	vmiInformer kvinformers.VirtualMachineInstanceInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kubevirt:     kubevirt,
		rsLister:     rsInformer.Lister(),
		vmiLister:    vmiInformer.Lister(),
		synced:       []cache.InformerSynced{rsInformer.Informer().HasSynced, vmiInformer.Informer().HasSynced},
		recorder:     recorder,
		queue:        controllerutil.NewQueue("virt-controller-replicaset"),
		expectations: expectations.New(),
		burst:        DefaultBurst,
	}
	if _, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	if _, err := vmiInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addVMI,
		UpdateFunc: c.updateVMI,
		DeleteFunc: c.deleteVMI,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) { controllerutil.Enqueue(c.queue, obj) }

// ownerKey is the key of the set controlling obj, if a set does.
func ownerKey(obj any) (string, bool) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return "", false
	}
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "VirtualMachineInstanceReplicaSet" || ref.APIVersion != v1.SchemeGroupVersion.String() {
		return "", false
	}
	return o.GetNamespace() + "/" + ref.Name, true
}

func vmiKey(vmi *v1.VirtualMachineInstance) string { return vmi.Namespace + "/" + vmi.Name }

// enqueueMatching queues the sets that could adopt an instance without a controller.
func (c *Controller) enqueueMatching(vmi *v1.VirtualMachineInstance) {
	sets, err := c.rsLister.VirtualMachineInstanceReplicaSets(vmi.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, rs := range sets {
		if sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(vmi.Labels)) {
			c.enqueue(rs)
		}
	}
}

func (c *Controller) addVMI(obj any) {
	vmi := obj.(*v1.VirtualMachineInstance)
	key, ok := ownerKey(vmi)
	if !ok {
		c.enqueueMatching(vmi)
		return
	}
	if vmi.DeletionTimestamp != nil {
		c.expectations.DeletionObserved(key, vmiKey(vmi))
	} else {
		c.expectations.CreationObserved(key)
	}
	c.queue.Add(key)
}

func (c *Controller) updateVMI(oldObj, curObj any) {
	old, cur := oldObj.(*v1.VirtualMachineInstance), curObj.(*v1.VirtualMachineInstance)
	if oldKey, ok := ownerKey(old); ok {
		c.queue.Add(oldKey)
	}
	key, ok := ownerKey(cur)
	if !ok {
		c.enqueueMatching(cur)
		return
	}
	if cur.DeletionTimestamp != nil {
		c.expectations.DeletionObserved(key, vmiKey(cur))
	}
	c.queue.Add(key)
}

func (c *Controller) deleteVMI(obj any) {
	key, ok := ownerKey(obj)
	if !ok {
		return
	}
	o, _ := controllerutil.Object(obj)
	c.expectations.DeletionObserved(key, o.GetNamespace()+"/"+o.GetName())
	c.queue.Add(key)
}

// Run starts workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	klog.InfoS("Starting controller", "controller", "replicaset")
	if !cache.WaitForNamedCacheSync("replicaset", ctx.Done(), c.synced...) {
		return fmt.Errorf("replicaset controller: caches did not sync")
	}
	controllerutil.RunWorkers(ctx, "replicaset", c.queue, workers, c.sync)
	return nil
}
