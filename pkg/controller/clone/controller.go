// Package clone is virt-controller's clone controller: a VirtualMachineClone of a
// VirtualMachine becomes a VirtualMachineSnapshot of it and then a VirtualMachineRestore of
// that snapshot into a new VirtualMachine, with new MACs, firmware UUID and serial and the
// clone's label and annotation filters and patches; a clone of a snapshot is restored
// directly. The snapshot and restore controllers (pkg/controller/snapshot) do the work, under
// their own rules; the temporary snapshot and restore are owned by the clone and deleted once
// the target's claims are bound, as KubeVirt's clone controller does.
package clone

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	cloneclient "github.com/hangarvm/hangar/pkg/generated/clone/clientset/versioned"
	cloneinformers "github.com/hangarvm/hangar/pkg/generated/clone/informers/externalversions/clone/v1beta1"
	clonelisters "github.com/hangarvm/hangar/pkg/generated/clone/listers/clone/v1beta1"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
	vmsnapshotclient "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned"
	vmsnapshotinformers "github.com/hangarvm/hangar/pkg/generated/snapshot/informers/externalversions/snapshot/v1beta1"
	vmsnapshotlisters "github.com/hangarvm/hangar/pkg/generated/snapshot/listers/snapshot/v1beta1"
)

// Clients are the API clients the controller writes through: clones' status, snapshots and
// restores.
type Clients struct {
	Clones    cloneclient.Interface
	Snapshots vmsnapshotclient.Interface
}

// Informers are the caches the controller reads.
type Informers struct {
	Clones    cloneinformers.VirtualMachineCloneInformer
	VMs       kvinformers.VirtualMachineInformer
	Snapshots vmsnapshotinformers.VirtualMachineSnapshotInformer
	Contents  vmsnapshotinformers.VirtualMachineSnapshotContentInformer
	Restores  vmsnapshotinformers.VirtualMachineRestoreInformer
	Claims    coreinformers.PersistentVolumeClaimInformer
}

// Controller runs the clone loop.
type Controller struct {
	clients  Clients
	recorder record.EventRecorder

	clones    clonelisters.VirtualMachineCloneLister
	vms       kvlisters.VirtualMachineLister
	snapshots vmsnapshotlisters.VirtualMachineSnapshotLister
	contents  vmsnapshotlisters.VirtualMachineSnapshotContentLister
	restores  vmsnapshotlisters.VirtualMachineRestoreLister
	claims    corelisters.PersistentVolumeClaimLister
	synced    []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// now and suffix are the clock and the random name suffix (tests set them).
	now    func() metav1.Time
	suffix func() string
}

var everything = labels.Everything()

// New returns the controller, with event handlers registered on the informers.
func New(clients Clients, inf Informers, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		clients: clients, recorder: recorder,
		clones: inf.Clones.Lister(), vms: inf.VMs.Lister(), snapshots: inf.Snapshots.Lister(),
		contents: inf.Contents.Lister(), restores: inf.Restores.Lister(), claims: inf.Claims.Lister(),
		queue: controllerutil.NewQueue("vmclone"),
		now:   metav1.Now, suffix: randomSuffix,
	}
	synced, err := controllerutil.AddHandlers(
		controllerutil.Handler{Informer: inf.Clones.Informer(), OnChange: func(obj any) { controllerutil.Enqueue(c.queue, obj) }},
		// The snapshot and the restore a clone owns move it on; a snapshot cloned from, or a
		// VM (source appearing, target created), moves the clones naming it.
		controllerutil.Handler{Informer: inf.Snapshots.Informer(), OnChange: c.enqueueForSnapshot},
		controllerutil.Handler{Informer: inf.Restores.Informer(), OnChange: c.enqueueOwner},
		controllerutil.Handler{Informer: inf.VMs.Informer(), OnChange: c.enqueueForVM},
		controllerutil.Handler{Informer: inf.Contents.Informer(), OnChange: c.enqueueForContent},
		// A restored claim binding lets the clone clean up.
		controllerutil.Handler{Informer: inf.Claims.Informer(), OnChange: c.enqueueForClaim},
	)
	if err != nil {
		return nil, err
	}
	c.synced = synced
	return c, nil
}

// Run syncs the caches and runs workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("clone controller: caches did not sync")
	}
	controllerutil.RunWorkers(ctx, "vmclone", c.queue, workers, c.sync)
	return nil
}

// enqueueOwner enqueues the clone controlling obj.
func (c *Controller) enqueueOwner(obj any) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == clonev1beta1.KindClone && ref.APIVersion == clonev1beta1.SchemeGroupVersion.String() {
		c.queue.Add(o.GetNamespace() + "/" + ref.Name)
	}
}

// enqueueForSnapshot enqueues the clone owning a snapshot and the clones of it.
func (c *Controller) enqueueForSnapshot(obj any) {
	c.enqueueOwner(obj)
	if o, ok := controllerutil.Object(obj); ok {
		c.enqueueNaming(o.GetNamespace(), snapshotv1beta1.KindSnapshot, o.GetName())
	}
}

// enqueueForContent enqueues for the snapshot a content belongs to.
func (c *Controller) enqueueForContent(obj any) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return
	}
	if content, ok := o.(*snapshotv1beta1.VirtualMachineSnapshotContent); ok && content.Spec.VirtualMachineSnapshotName != nil {
		if s, err := c.snapshots.VirtualMachineSnapshots(content.Namespace).Get(*content.Spec.VirtualMachineSnapshotName); err == nil {
			c.enqueueForSnapshot(s)
		}
	}
}

// enqueueForVM enqueues the clones whose source or target a VM is.
func (c *Controller) enqueueForVM(obj any) {
	if o, ok := controllerutil.Object(obj); ok {
		c.enqueueNaming(o.GetNamespace(), "VirtualMachine", o.GetName())
	}
}

// enqueueForClaim enqueues the clone whose restore made a claim.
func (c *Controller) enqueueForClaim(obj any) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return
	}
	name, ok := o.GetAnnotations()["restore.kubevirt.io/name"]
	if !ok {
		return
	}
	if r, err := c.restores.VirtualMachineRestores(o.GetNamespace()).Get(name); err == nil {
		c.enqueueOwner(r)
	}
}

// enqueueNaming enqueues the clones of ns whose source is kind/name or whose target is
// the VM name.
func (c *Controller) enqueueNaming(ns, kind, name string) {
	clones, err := c.clones.VirtualMachineClones(ns).List(everything)
	if err != nil {
		return
	}
	for _, cl := range clones {
		source := cl.Spec.Source != nil && cl.Spec.Source.Kind == kind && cl.Spec.Source.Name == name
		target := kind == "VirtualMachine" && targetName(cl) == name
		if source || target {
			controllerutil.Enqueue(c.queue, cl)
		}
	}
}
