// Package evacuation is the evacuation controller: an instance marked to leave its node
// (status.evacuationNodeName, set by virt-api when an eviction of its launcher pod was
// refused, pkg/admission/eviction) gets a VirtualMachineInstanceMigration, within the cluster
// configuration's limits on migrations in flight in the cluster and out of one node. The
// migration controller carries migrations out; this one only starts them, retrying a failed
// evacuation after a back-off until the instance has left or is no longer marked.
package evacuation

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
)

// Event reasons on instances (KubeVirt's).
const (
	SuccessfulCreateReason = "SuccessfulCreate"
	FailedCreateReason     = "FailedCreate"
)

// GenerateName is the prefix of evacuation migrations (KubeVirt's).
const GenerateName = "kubevirt-evacuation-"

// clusterKey is the controller's only queue key: the limits are cluster-wide, so every sync
// looks at every marked instance and every migration in flight, from the caches.
const clusterKey = "cluster"

// Controller is the evacuation controller.
type Controller struct {
	kubevirt        versioned.Interface
	vmiLister       kvlisters.VirtualMachineInstanceLister
	migrationLister kvlisters.VirtualMachineInstanceMigrationLister
	synced          []cache.InformerSynced
	config          *clusterconfig.Store
	recorder        record.EventRecorder
	queue           workqueue.TypedRateLimitingInterface[string]
	now             func() time.Time

	// created holds the instances this controller created a migration for that the cache
	// does not show yet, so a sync right after a creation neither creates another nor
	// exceeds the limits.
	mu      sync.Mutex
	created map[string]time.Time
}

// createdTTL is how long a creation counts without the cache showing it.
const createdTTL = 30 * time.Second

// New wires the controller to its informers.
func New(kubevirt versioned.Interface, vmiInformer kvinformers.VirtualMachineInstanceInformer,
	migrationInformer kvinformers.VirtualMachineInstanceMigrationInformer, cfg *clusterconfig.Store, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kubevirt:        kubevirt,
		vmiLister:       vmiInformer.Lister(),
		migrationLister: migrationInformer.Lister(),
		synced:          []cache.InformerSynced{vmiInformer.Informer().HasSynced, migrationInformer.Informer().HasSynced},
		config:          cfg,
		recorder:        recorder,
		queue:           controllerutil.NewQueue("virt-controller-evacuation"),
		now:             time.Now,
		created:         map[string]time.Time{},
	}
	onVMI := func(obj any) {
		if vmi, ok := obj.(*v1.VirtualMachineInstance); !ok || vmi.Status.EvacuationNodeName != "" {
			c.queue.Add(clusterKey)
		}
	}
	if _, err := vmiInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onVMI,
		UpdateFunc: func(old, cur any) { onVMI(old); onVMI(cur) },
		DeleteFunc: onVMI,
	}); err != nil {
		return nil, err
	}
	// A migration that ends frees a slot; a new one fills one.
	onMigration := func(any) { c.queue.Add(clusterKey) }
	if _, err := migrationInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onMigration,
		UpdateFunc: func(_, cur any) { onMigration(cur) },
		DeleteFunc: onMigration,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run starts the worker and blocks until ctx ends. One worker: there is one key.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	klog.InfoS("Starting controller", "controller", "evacuation")
	if !cache.WaitForNamedCacheSync("evacuation", ctx.Done(), c.synced...) {
		return fmt.Errorf("evacuation controller: caches did not sync")
	}
	c.queue.Add(clusterKey)
	controllerutil.RunWorkers(ctx, "evacuation", c.queue, 1, func(ctx context.Context, _ string) error { return c.sync(ctx) })
	return nil
}
