// Package export is virt-controller's export controller: a VirtualMachineExport of a stopped
// VirtualMachine's claims, or of one claim, gets a server pod in its namespace that mounts
// the claims read-only and serves them over HTTPS to whoever presents the export's token
// (cmd/virt-exportserver), a Service in front of it, and the links to download from in its
// status, until its time is up; then the export is deleted and its pod, Service and Secrets
// with it (they are owned by the export).
package export

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	exportclient "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned"
	exportinformers "github.com/hangarvm/hangar/pkg/generated/export/informers/externalversions/export/v1beta1"
	exportlisters "github.com/hangarvm/hangar/pkg/generated/export/listers/export/v1beta1"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// Clients are the API clients the controller writes through.
type Clients struct {
	Exports exportclient.Interface
	Kube    kubernetes.Interface
}

// Informers are the caches the controller reads. Pods and Services are the export servers'
// only (the label launcherpod.ExportNameLabel): the controller's memory must not grow with
// the cluster's.
type Informers struct {
	Exports  exportinformers.VirtualMachineExportInformer
	Pods     coreinformers.PodInformer
	Services coreinformers.ServiceInformer
	Claims   coreinformers.PersistentVolumeClaimInformer
	VMs      kvinformers.VirtualMachineInformer
	VMIs     kvinformers.VirtualMachineInstanceInformer
}

// Controller runs the export loop.
type Controller struct {
	clients  Clients
	recorder record.EventRecorder
	// image is the launcher image, which holds the export server.
	image func() string

	exports  exportlisters.VirtualMachineExportLister
	pods     corelisters.PodLister
	services corelisters.ServiceLister
	claims   corelisters.PersistentVolumeClaimLister
	vms      kvlisters.VirtualMachineLister
	vmis     kvlisters.VirtualMachineInstanceLister
	synced   []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// now is the clock (tests set it).
	now func() time.Time
}

// New returns the controller, with event handlers registered on the informers.
func New(clients Clients, inf Informers, image func() string, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		clients: clients, recorder: recorder, image: image,
		exports: inf.Exports.Lister(), pods: inf.Pods.Lister(), services: inf.Services.Lister(),
		claims: inf.Claims.Lister(), vms: inf.VMs.Lister(), vmis: inf.VMIs.Lister(),
		queue: controllerutil.NewQueue("vmexport"),
		now:   time.Now,
	}
	synced, err := controllerutil.AddHandlers(
		controllerutil.Handler{Informer: inf.Exports.Informer(), OnChange: func(obj any) { controllerutil.Enqueue(c.queue, obj) }},
		// A server pod getting ready, or its Service gone, moves its export on.
		controllerutil.Handler{Informer: inf.Pods.Informer(), OnChange: c.enqueueLabelled},
		controllerutil.Handler{Informer: inf.Services.Informer(), OnChange: c.enqueueLabelled},
		// A claim bound, a VM's volumes changed, an instance started or gone: the exports
		// of the namespace look again (there are few).
		controllerutil.Handler{Informer: inf.Claims.Informer(), OnChange: c.enqueueNamespace},
		controllerutil.Handler{Informer: inf.VMs.Informer(), OnChange: c.enqueueNamespace},
		controllerutil.Handler{Informer: inf.VMIs.Informer(), OnChange: c.enqueueNamespace},
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
		return fmt.Errorf("export controller: caches did not sync")
	}
	controllerutil.RunWorkers(ctx, "vmexport", c.queue, workers, c.sync)
	return nil
}

// ServerSelector selects export servers' pods and Services, for the informers.
func ServerSelector() string {
	return labels.Set{v1.AppLabel: launcherpod.ExporterAppLabelValue}.String()
}

// enqueueLabelled enqueues the export a server pod or Service belongs to.
func (c *Controller) enqueueLabelled(obj any) {
	if o, ok := controllerutil.Object(obj); ok {
		if name := o.GetLabels()[launcherpod.ExportNameLabel]; name != "" {
			c.queue.Add(o.GetNamespace() + "/" + name)
		}
	}
}

// enqueueNamespace enqueues every export of obj's namespace.
func (c *Controller) enqueueNamespace(obj any) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return
	}
	exports, err := c.exports.VirtualMachineExports(o.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, e := range exports {
		controllerutil.Enqueue(c.queue, e)
	}
}

// ownerRef makes an export the controller of what it owns, so it all goes with it.
func ownerRef(name string, uid metav1.Object) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: "export.kubevirt.io/v1beta1", Kind: "VirtualMachineExport",
		Name: name, UID: uid.GetUID(), Controller: &t, BlockOwnerDeletion: &t}
}
