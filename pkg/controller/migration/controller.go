// Package migration is virt-controller's part of a live migration
// (VirtualMachineInstanceMigration): it places a target launcher pod on another node, tells
// both nodes' handlers which migration to carry (the instance's status.migrationState),
// hands the instance over to the target node when the source reports completion, and
// cleans up the pod that lost. The handlers move the guest (pkg/handler).
package migration

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
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
	listers "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
)

// Limits and timeouts (KubeVirt's defaults).
const (
	DefaultParallelMigrationsPerCluster      = 5
	DefaultParallelOutboundMigrationsPerNode = 2
	// unschedulableTimeout fails a migration whose target pod cannot be scheduled.
	unschedulableTimeout = 5 * time.Minute
	// pendingTimeout fails a migration whose target pod never comes up, scheduled or not.
	pendingTimeout = 15 * time.Minute
	// startTimeout aborts a migration the source has not started this long after its
	// target pod was placed (a target that never gets ready).
	startTimeout = 5 * time.Minute
	// podCacheGrace is how long a target pod just created may be missing from the pod
	// informer's cache before the migration counts it gone.
	podCacheGrace = 10 * time.Second
	// abortGrace is how long a source has to carry out an abort the controller asked for
	// (runningBound) before the controller ends the migration without it.
	abortGrace = time.Minute
	// imageDiskAllowance is what runningBound counts for a disk whose size only the node
	// knows (a containerDisk, a kernelBoot image) when it is copied: more than the cloud
	// images these are made from.
	imageDiskAllowance = 10 << 30
)

// Options are the controller's settings.
type Options struct {
	// HandlerNamespace and HandlerSelector find the virt-handler pods, whose address a
	// source handler dials (HandlerPort: their migration port).
	HandlerNamespace string
	HandlerSelector  labels.Selector
	HandlerPort      int
}

const (
	vmisByName     = "byVMIName"
	podsByJob      = "byMigrationJob"
	podsByVMIIndex = "byVMI"
)

// Controller reconciles VirtualMachineInstanceMigrations.
type Controller struct {
	kubevirt   versioned.Interface
	kube       kubernetes.Interface
	lister     listers.VirtualMachineInstanceMigrationLister
	migIndexer cache.Indexer
	vmiLister  listers.VirtualMachineInstanceLister
	podIndexer cache.Indexer
	handlers   corelisters.PodLister
	claims     corelisters.PersistentVolumeClaimLister
	synced     []cache.InformerSynced
	config     *clusterconfig.Store
	recorder   record.EventRecorder
	queue      workqueue.TypedRateLimitingInterface[string]
	opts       Options
	now        func() time.Time
	// migVersions and vmiVersions: the cached migration and instance a write of ours
	// replaced, by key. A sync from the older copy would undo what the write recorded: take
	// the target it created for a stray and delete it, or take the instance for another
	// migration's and fail this one.
	migVersions, vmiVersions controllerutil.StaleVersions
}

// New wires the controller. podInformer holds launcher pods; handlerInformer virt-handler's;
// claimInformer the claims a target pod mounts or maps by their volumeMode.
func New(kubevirt versioned.Interface, kube kubernetes.Interface, migInformer kvinformers.VirtualMachineInstanceMigrationInformer,
	vmiInformer kvinformers.VirtualMachineInstanceInformer, podInformer, handlerInformer coreinformers.PodInformer,
	claimInformer coreinformers.PersistentVolumeClaimInformer, cfg *clusterconfig.Store, recorder record.EventRecorder, opts Options) (*Controller, error) {
	RegisterMetrics(migInformer.Lister())
	c := &Controller{
		kubevirt: kubevirt, kube: kube,
		lister: migInformer.Lister(), migIndexer: migInformer.Informer().GetIndexer(),
		vmiLister: vmiInformer.Lister(), podIndexer: podInformer.Informer().GetIndexer(),
		handlers: handlerInformer.Lister(), claims: claimInformer.Lister(),
		synced: []cache.InformerSynced{migInformer.Informer().HasSynced, vmiInformer.Informer().HasSynced,
			podInformer.Informer().HasSynced, handlerInformer.Informer().HasSynced, claimInformer.Informer().HasSynced},
		config: cfg, recorder: recorder, opts: opts, now: time.Now,
		queue: controllerutil.NewQueue("virt-controller-migration"),
	}
	if err := migInformer.Informer().AddIndexers(cache.Indexers{vmisByName: func(obj any) ([]string, error) {
		m := obj.(*v1.VirtualMachineInstanceMigration)
		return []string{m.Namespace + "/" + m.Spec.VMIName}, nil
	}}); err != nil {
		return nil, err
	}
	if err := podInformer.Informer().AddIndexers(cache.Indexers{podsByJob: func(obj any) ([]string, error) {
		p := obj.(*corev1.Pod)
		if uid := p.Labels[v1.MigrationJobLabel]; uid != "" {
			return []string{uid}, nil
		}
		return nil, nil
	}, podsByVMIIndex: func(obj any) ([]string, error) {
		p := obj.(*corev1.Pod)
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "VirtualMachineInstance" {
			return []string{p.Namespace + "/" + ref.Name}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	enqueue := func(obj any) { controllerutil.Enqueue(c.queue, obj) }
	if _, err := migInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	// An instance's change (its migration's progress, above all) wakes its migrations.
	byVMI := func(obj any) {
		if key, ok := controllerutil.Key(obj); ok {
			c.enqueueIndexed(vmisByName, key)
		}
	}
	if _, err := vmiInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: byVMI, UpdateFunc: func(_, o any) { byVMI(o) }, DeleteFunc: byVMI,
	}); err != nil {
		return nil, err
	}
	byPod := func(obj any) {
		if o, ok := controllerutil.Object(obj); ok {
			if uid := o.GetLabels()[v1.MigrationJobLabel]; uid != "" {
				for _, m := range c.migIndexer.List() {
					if mig := m.(*v1.VirtualMachineInstanceMigration); string(mig.UID) == uid {
						enqueue(mig)
					}
				}
			}
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: byPod, UpdateFunc: func(_, o any) { byPod(o) }, DeleteFunc: byPod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueueIndexed(index, key string) {
	objs, err := c.migIndexer.ByIndex(index, key)
	if err != nil {
		return
	}
	for _, o := range objs {
		controllerutil.Enqueue(c.queue, o)
	}
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	klog.InfoS("Starting controller", "controller", "migration")
	if !cache.WaitForNamedCacheSync("migration", ctx.Done(), c.synced...) {
		return fmt.Errorf("migration controller: caches did not sync")
	}
	controllerutil.RunWorkers(ctx, "migration", c.queue, workers, c.sync)
	return nil
}

// targetPods are the launcher pods made for migration mig.
func (c *Controller) targetPods(mig *v1.VirtualMachineInstanceMigration) []*corev1.Pod {
	objs, _ := c.podIndexer.ByIndex(podsByJob, string(mig.UID))
	var pods []*corev1.Pod
	for _, o := range objs {
		if p := o.(*corev1.Pod); p.Namespace == mig.Namespace {
			pods = append(pods, p)
		}
	}
	return pods
}

// handlerAddress is the migration address of node's virt-handler ("" while it has none).
func (c *Controller) handlerAddress(node string) string {
	pods, err := c.handlers.Pods(c.opts.HandlerNamespace).List(c.opts.HandlerSelector)
	if err != nil {
		return ""
	}
	for _, p := range pods {
		if p.Spec.NodeName == node && p.Status.PodIP != "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return fmt.Sprintf("%s:%d", p.Status.PodIP, c.opts.HandlerPort)
		}
	}
	return ""
}

// activeCounts are the migrations under way, in the cluster and out of each node.
func (c *Controller) activeCounts() (cluster int, byNode map[string]int) {
	byNode = map[string]int{}
	for _, o := range c.migIndexer.List() {
		m := o.(*v1.VirtualMachineInstanceMigration)
		if !isActive(m.Status.Phase) {
			continue
		}
		cluster++
		if ms := m.Status.MigrationState; ms != nil && ms.SourceNode != "" {
			byNode[ms.SourceNode]++
		}
	}
	return cluster, byNode
}

func isActive(p v1.VirtualMachineInstanceMigrationPhase) bool {
	switch p {
	case v1.MigrationScheduling, v1.MigrationScheduled, v1.MigrationPreparingTarget, v1.MigrationTargetReady, v1.MigrationRunning:
		return true
	}
	return false
}

func isFinal(p v1.VirtualMachineInstanceMigrationPhase) bool {
	return p == v1.MigrationSucceeded || p == v1.MigrationFailed
}
