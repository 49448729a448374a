// Package vm is the VirtualMachine controller: it keeps exactly one instance, named like the
// VirtualMachine, while the run strategy says the machine should run, and none while it
// should not, with KubeVirt's semantics for runStrategy, start/stop requests, crash-loop
// back-off and status.
package vm

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/controller/expectations"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
)

// Controller is the VirtualMachine controller.
type Controller struct {
	kubevirt versioned.Interface

	vmLister  kvlisters.VirtualMachineLister
	vmiLister kvlisters.VirtualMachineInstanceLister
	synced    []cache.InformerSynced

	recorder     record.EventRecorder
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *expectations.Expectations // creations and deletions of each VM's instance, by VM key
	clock        clock.PassiveClock
	// jitter picks the random part of the crash-loop back-off; tests make it predictable.
	jitter func(n int) int

	// staleVersions remembers, per VM key, the resourceVersion a status write replaced: a
	// cached VM still at that version predates our own write and must not be acted upon (it
	// may show a start request we already carried out).
	staleVersions controllerutil.StaleVersions

	// claims creates the VMs' state claims (stateclaim.go); nil: none are created.
	claims *stateClaims
	// instancetypes keeps the revisions of VMs' instance types and preferences and expands
	// VMs (instancetype.go); nil: neither.
	instancetypes *instancetypes
	// dataVolumes creates, watches and waits for VMs' DataVolumes (datavolumes.go); nil where
	// the cluster does not serve CDI.
	dataVolumes *dataVolumes
}

// New wires the controller to its informers.
func New(kubevirt versioned.Interface, vmInformer kvinformers.VirtualMachineInformer,
	vmiInformer kvinformers.VirtualMachineInstanceInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kubevirt:     kubevirt,
		vmLister:     vmInformer.Lister(),
		vmiLister:    vmiInformer.Lister(),
		synced:       []cache.InformerSynced{vmInformer.Informer().HasSynced, vmiInformer.Informer().HasSynced},
		recorder:     recorder,
		queue:        controllerutil.NewQueue("virt-controller-vm"),
		expectations: expectations.New(),
		clock:        clock.RealClock{},
		jitter:       randIntn,
	}
	if _, err := vmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
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

// vmKeyOf is the key of the VM an instance belongs to: its controller if that is a VM, else
// the VM of the same name (which may adopt an orphan).
func vmKeyOf(obj any) (string, bool) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return "", false
	}
	ref := metav1.GetControllerOf(o)
	switch {
	case ref == nil:
		return o.GetNamespace() + "/" + o.GetName(), true
	case ref.Kind == "VirtualMachine" && ref.APIVersion == v1.SchemeGroupVersion.String():
		return o.GetNamespace() + "/" + ref.Name, true
	}
	return "", false
}

func vmiKey(obj any) string {
	o, _ := controllerutil.Object(obj)
	return o.GetNamespace() + "/" + o.GetName()
}

func (c *Controller) addVMI(obj any) {
	key, ok := vmKeyOf(obj)
	if !ok {
		return
	}
	vmi := obj.(*v1.VirtualMachineInstance)
	if vmi.DeletionTimestamp != nil {
		c.expectations.DeletionObserved(key, vmiKey(obj))
	} else {
		c.expectations.CreationObserved(key)
	}
	c.queue.Add(key)
}

func (c *Controller) updateVMI(old, cur any) {
	if key, ok := vmKeyOf(old); ok {
		c.queue.Add(key)
	}
	key, ok := vmKeyOf(cur)
	if !ok {
		return
	}
	if cur.(*v1.VirtualMachineInstance).DeletionTimestamp != nil {
		c.expectations.DeletionObserved(key, vmiKey(cur))
	}
	c.queue.Add(key)
}

func (c *Controller) deleteVMI(obj any) {
	key, ok := vmKeyOf(obj)
	if !ok {
		return
	}
	c.expectations.DeletionObserved(key, vmiKey(obj))
	c.queue.Add(key)
}

// Run starts workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	klog.InfoS("Starting controller", "controller", "vm")
	if !cache.WaitForNamedCacheSync("vm", ctx.Done(), c.synced...) {
		return fmt.Errorf("vm controller: caches did not sync")
	}
	controllerutil.RunWorkers(ctx, "vm", c.queue, workers, c.sync)
	return nil
}
