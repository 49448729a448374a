// Package snapshot is virt-controller's snapshot and restore controllers: a
// VirtualMachineSnapshot becomes a VirtualMachineSnapshotContent (the VM's spec) and a
// VolumeSnapshot of each of the VM's claims, taken by the cluster's CSI snapshotter; a
// VirtualMachineRestore becomes claims restored from those VolumeSnapshots and a VM that uses
// them. The storage system does the snapshotting; Hangar keeps the VM's side of it.
package snapshot

import (
	"context"
	"fmt"

	snapshotclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	vsinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions/volumesnapshot/v1"
	vslisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
	vmsnapshotclient "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned"
	vmsnapshotinformers "github.com/hangarvm/hangar/pkg/generated/snapshot/informers/externalversions/snapshot/v1beta1"
	vmsnapshotlisters "github.com/hangarvm/hangar/pkg/generated/snapshot/listers/snapshot/v1beta1"
)

// Clients are the API clients the controllers write through.
type Clients struct {
	// KubeVirt writes VMs; Snapshots writes snapshot.kubevirt.io; VolumeSnapshots writes
	// snapshot.storage.k8s.io; Kube writes claims.
	KubeVirt        versioned.Interface
	Snapshots       vmsnapshotclient.Interface
	VolumeSnapshots snapshotclient.Interface
	Kube            kubernetes.Interface
	// Freezer freezes a running guest's file systems for its snapshot (nil: never; the
	// snapshots of running VMs are then crash-consistent, indication NoGuestAgent).
	Freezer Freezer
}

// Informers are the caches the controllers read.
type Informers struct {
	Snapshots             vmsnapshotinformers.VirtualMachineSnapshotInformer
	Contents              vmsnapshotinformers.VirtualMachineSnapshotContentInformer
	Restores              vmsnapshotinformers.VirtualMachineRestoreInformer
	VMs                   kvinformers.VirtualMachineInformer
	VMIs                  kvinformers.VirtualMachineInstanceInformer
	VolumeSnapshots       vsinformers.VolumeSnapshotInformer
	VolumeSnapshotClasses vsinformers.VolumeSnapshotClassInformer
	Claims                coreinformers.PersistentVolumeClaimInformer
	StorageClasses        storageinformers.StorageClassInformer
}

// Controller runs the snapshot and the restore loops.
type Controller struct {
	clients  Clients
	recorder record.EventRecorder

	snapshots       vmsnapshotlisters.VirtualMachineSnapshotLister
	contents        vmsnapshotlisters.VirtualMachineSnapshotContentLister
	restores        vmsnapshotlisters.VirtualMachineRestoreLister
	vms             kvlisters.VirtualMachineLister
	vmis            kvlisters.VirtualMachineInstanceLister
	volumeSnapshots vslisters.VolumeSnapshotLister
	classes         vslisters.VolumeSnapshotClassLister
	claims          corelisters.PersistentVolumeClaimLister
	storageClasses  storagelisters.StorageClassLister
	synced          []cache.InformerSynced

	snapshotQueue workqueue.TypedRateLimitingInterface[string]
	restoreQueue  workqueue.TypedRateLimitingInterface[string]
	// now is the clock of failure deadlines (tests set it).
	now func() metav1.Time
}

// New returns the controllers, with event handlers registered on the informers.
func New(clients Clients, inf Informers, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		clients: clients, recorder: recorder,
		snapshots: inf.Snapshots.Lister(), contents: inf.Contents.Lister(), restores: inf.Restores.Lister(),
		vms: inf.VMs.Lister(), vmis: inf.VMIs.Lister(),
		volumeSnapshots: inf.VolumeSnapshots.Lister(), classes: inf.VolumeSnapshotClasses.Lister(),
		claims: inf.Claims.Lister(), storageClasses: inf.StorageClasses.Lister(),
		snapshotQueue: controllerutil.NewQueue("vmsnapshot"),
		restoreQueue:  controllerutil.NewQueue("vmrestore"),
		now:           metav1.Now,
	}
	for _, i := range []cache.SharedIndexInformer{inf.Snapshots.Informer(), inf.Contents.Informer(), inf.Restores.Informer(),
		inf.VMs.Informer(), inf.VMIs.Informer(), inf.VolumeSnapshots.Informer(), inf.VolumeSnapshotClasses.Informer(),
		inf.Claims.Informer(), inf.StorageClasses.Informer()} {
		c.synced = append(c.synced, i.HasSynced)
	}
	enqueueSnapshot := func(obj any) { controllerutil.Enqueue(c.snapshotQueue, obj) }
	enqueueRestore := func(obj any) { controllerutil.Enqueue(c.restoreQueue, obj) }
	// The caches waited on are listed above: the claims and classes are read, not watched.
	_, err := controllerutil.AddHandlers(
		controllerutil.Handler{Informer: inf.Snapshots.Informer(), OnChange: enqueueSnapshot},
		controllerutil.Handler{Informer: inf.Restores.Informer(), OnChange: enqueueRestore},
		// A content or a VolumeSnapshot changing moves its snapshot on.
		controllerutil.Handler{Informer: inf.Contents.Informer(), OnChange: c.enqueueContentOwner},
		controllerutil.Handler{Informer: inf.VolumeSnapshots.Informer(), OnChange: c.enqueueVolumeSnapshotOwner},
		// A VM or its instance stopping lets a waiting restore go on; a new VolumeSnapshotClass
		// lets a waiting snapshot go on.
		controllerutil.Handler{Informer: inf.VMs.Informer(), OnChange: c.enqueueForVM},
		controllerutil.Handler{Informer: inf.VMIs.Informer(), OnChange: c.enqueueForVM},
		controllerutil.Handler{Informer: inf.VolumeSnapshotClasses.Informer(), OnChange: c.enqueueAllSnapshots},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs the caches and runs workers on each queue until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("snapshot controller: caches did not sync")
	}
	done := make(chan struct{})
	go func() {
		controllerutil.RunWorkers(ctx, "vmrestore", c.restoreQueue, workers, c.syncRestore)
		close(done)
	}()
	controllerutil.RunWorkers(ctx, "vmsnapshot", c.snapshotQueue, workers, c.syncSnapshot)
	<-done
	return nil
}

// enqueueContentOwner enqueues the snapshot a content belongs to.
func (c *Controller) enqueueContentOwner(obj any) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return
	}
	if content, ok := o.(*snapshotv1beta1.VirtualMachineSnapshotContent); ok && content.Spec.VirtualMachineSnapshotName != nil {
		c.snapshotQueue.Add(content.Namespace + "/" + *content.Spec.VirtualMachineSnapshotName)
	}
}

// enqueueVolumeSnapshotOwner enqueues the snapshot of the content owning a VolumeSnapshot.
func (c *Controller) enqueueVolumeSnapshotOwner(obj any) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != snapshotv1beta1.KindSnapshotContent {
		return
	}
	content, err := c.contents.VirtualMachineSnapshotContents(o.GetNamespace()).Get(ref.Name)
	if err != nil || content.UID != ref.UID {
		return
	}
	c.enqueueContentOwner(content)
}

// enqueueForVM enqueues the snapshots and restores of the VM named as obj (a VM or instance).
func (c *Controller) enqueueForVM(obj any) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return
	}
	// A VM held by a snapshot that is gone is released by that snapshot's key.
	if vm, ok := o.(*v1.VirtualMachine); ok && vm.Status.SnapshotInProgress != nil {
		c.snapshotQueue.Add(vm.Namespace + "/" + *vm.Status.SnapshotInProgress)
	}
	if snaps, err := c.snapshots.VirtualMachineSnapshots(o.GetNamespace()).List(everything); err == nil {
		for _, s := range snaps {
			if s.Spec.Source.Name == o.GetName() {
				controllerutil.Enqueue(c.snapshotQueue, s)
			}
		}
	}
	if restores, err := c.restores.VirtualMachineRestores(o.GetNamespace()).List(everything); err == nil {
		for _, r := range restores {
			if r.Spec.Target.Name == o.GetName() {
				controllerutil.Enqueue(c.restoreQueue, r)
			}
		}
	}
}

// enqueueAllSnapshots enqueues the snapshots not yet done.
func (c *Controller) enqueueAllSnapshots(any) {
	snaps, err := c.snapshots.List(everything)
	if err != nil {
		return
	}
	for _, s := range snaps {
		if !snapshotDone(s) {
			controllerutil.Enqueue(c.snapshotQueue, s)
		}
	}
}
