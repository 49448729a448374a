// Package workloadupdate moves running guests to launchers of the installed version after an
// upgrade, as KubeVirt's workload updater does: an instance whose launcher pod runs another
// image than the cluster configuration's launcherImage is outdated and carries the label
// kubevirt.io/outdatedLauncherImage; with the LiveMigrate method, migratable ones get a
// VirtualMachineInstanceMigration (its target pod is built with the current image), in
// batches of batchEvictionSize per batchEvictionInterval and within the migration limits. An
// instance that cannot migrate keeps its launcher, and says why in an event; hangar-operator
// counts the labelled instances in the Hangar object's status.
package workloadupdate

import (
	"context"
	"fmt"
	"sync"
	"time"

	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
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

// OutdatedLabel marks an instance whose launcher is not of the installed version (KubeVirt's).
const OutdatedLabel = v1.OutdatedLauncherImageLabel

// MigrationAnnotation marks a migration this controller created (KubeVirt's).
const MigrationAnnotation = v1.WorkloadUpdateMigrationAnnotation

// GenerateName is the prefix of its migrations (KubeVirt's).
const GenerateName = "kubevirt-workload-update-"

// Event reasons on instances.
const (
	MigrationCreatedReason = "WorkloadUpdateMigration"
	CannotMigrateReason    = "OutdatedLauncherCannotMigrate"
	FailedCreateReason     = "FailedCreate"
)

// clusterKey is the controller's only key: batches and limits are cluster-wide.
const clusterKey = "cluster"

// Controller is the workload update controller.
type Controller struct {
	kubevirt        versioned.Interface
	vmiLister       kvlisters.VirtualMachineInstanceLister
	migrationLister kvlisters.VirtualMachineInstanceMigrationLister
	podLister       corelisters.PodLister
	synced          []cache.InformerSynced
	config          *clusterconfig.Store
	recorder        record.EventRecorder
	queue           workqueue.TypedRateLimitingInterface[string]
	now             func() time.Time

	mu sync.Mutex
	// batches holds when each recent migration of this controller was created: a batch
	// interval holds at most BatchSize of them.
	batches []time.Time
	// created holds instances migrated that the cache does not show yet.
	created map[string]time.Time
	// told holds the instances (by UID) told they cannot migrate, so each is told once.
	told map[string]string
}

// New wires the controller to its informers. pods are the launcher pods (the manager's
// informer selects them by label).
func New(kubevirt versioned.Interface, vmiInformer kvinformers.VirtualMachineInstanceInformer,
	migrationInformer kvinformers.VirtualMachineInstanceMigrationInformer, podInformer coreinformers.PodInformer,
	cfg *clusterconfig.Store, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kubevirt:        kubevirt,
		vmiLister:       vmiInformer.Lister(),
		migrationLister: migrationInformer.Lister(),
		podLister:       podInformer.Lister(),
		synced: []cache.InformerSynced{vmiInformer.Informer().HasSynced, migrationInformer.Informer().HasSynced,
			podInformer.Informer().HasSynced},
		config:   cfg,
		recorder: recorder,
		queue:    controllerutil.NewQueue("virt-controller-workload-update"),
		now:      time.Now,
		created:  map[string]time.Time{},
		told:     map[string]string{},
	}
	enqueue := func(any) { c.queue.Add(clusterKey) }
	handler := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue}
	for _, informer := range []cache.SharedIndexInformer{vmiInformer.Informer(), migrationInformer.Informer(), podInformer.Informer()} {
		if _, err := informer.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ConfigChanged makes the controller look again: the launcher image or the strategy changed.
func (c *Controller) ConfigChanged() { c.queue.Add(clusterKey) }

// Run starts the worker and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	klog.InfoS("Starting controller", "controller", "workload-update")
	if !cache.WaitForNamedCacheSync("workload-update", ctx.Done(), c.synced...) {
		return fmt.Errorf("workload update controller: caches did not sync")
	}
	c.queue.Add(clusterKey)
	controllerutil.RunWorkers(ctx, "workload-update", c.queue, 1, func(ctx context.Context, _ string) error { return c.sync(ctx) })
	return nil
}
