// Package vmi is the VirtualMachineInstance controller: it gives every new instance a launcher
// pod, follows the pod until it is bound to a node (Pending → Scheduling → Scheduled, then the
// node agent takes over), fails the instance when its pod dies before that, and removes the
// pod when the instance ends or is deleted.
package vmi

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/hangarvm/hangar/pkg/controller/expectations"
	"github.com/hangarvm/hangar/pkg/controller/metrics"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// podsByOwnerIndex indexes launcher pods by the namespace/name of the instance that controls them.
const podsByOwnerIndex = "vmi"

// vmisByClaimIndex indexes instances by the namespace/name of each claim they name, so a claim
// that appears wakes the instances waiting for it.
const vmisByClaimIndex = "vmi-claims"

// Controller is the VirtualMachineInstance controller.
type Controller struct {
	kubevirt versioned.Interface
	kube     kubernetes.Interface

	vmiLister  kvlisters.VirtualMachineInstanceLister
	vmiIndexer cache.Indexer
	podIndexer cache.Indexer
	pvcLister  corelisters.PersistentVolumeClaimLister
	// nodeLister tells unresponsive nodes (nodes.go).
	nodeLister corelisters.NodeLister
	// dataVolumes is CDI's DataVolumes; nil where the cluster does not serve them
	// (datavolumes.go).
	dataVolumes cache.GenericLister
	// attachmentPods are the attachment pods of hotplugged volumes; nil does no hotplug
	// (hotplug.go).
	attachmentPods corelisters.PodLister
	synced         []cache.InformerSynced

	config       *clusterconfig.Store
	recorder     record.EventRecorder
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *expectations.Expectations // pod creations, by instance UID
	// staleVersions: the cached instance a write of ours replaced, by key. A sync of a key
	// whose cache does not show the write yet (a pod event comes first, say) waits for it
	// instead of failing its status write with a conflict.
	staleVersions controllerutil.StaleVersions
	now           func() time.Time
}

// New wires the controller to its informers. podInformer should be restricted to launcher
// pods (label kubevirt.io=virt-launcher); other pods are ignored anyway. pvcInformer tells
// the volumeMode of the claims instances name. The kubelet's events on launcher pods that
// cannot start are read through kube when needed (mounts.go).
func New(kubevirt versioned.Interface, kube kubernetes.Interface, vmiInformer kvinformers.VirtualMachineInstanceInformer,
	podInformer coreinformers.PodInformer, pvcInformer coreinformers.PersistentVolumeClaimInformer,
	nodeInformer coreinformers.NodeInformer,
	cfg *clusterconfig.Store, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kubevirt:   kubevirt,
		kube:       kube,
		vmiLister:  vmiInformer.Lister(),
		vmiIndexer: vmiInformer.Informer().GetIndexer(),
		podIndexer: podInformer.Informer().GetIndexer(),
		pvcLister:  pvcInformer.Lister(),
		nodeLister: nodeInformer.Lister(),
		synced: []cache.InformerSynced{vmiInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
			pvcInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced},
		config:       cfg,
		recorder:     recorder,
		queue:        controllerutil.NewQueue("virt-controller-vmi"),
		expectations: expectations.New(),
		now:          time.Now,
	}
	if err := podInformer.Informer().AddIndexers(cache.Indexers{podsByOwnerIndex: indexByOwner}); err != nil {
		return nil, fmt.Errorf("index launcher pods: %w", err)
	}
	if err := vmiInformer.Informer().AddIndexers(cache.Indexers{vmisByClaimIndex: indexByClaim, vmisByNodeIndex: indexByNode}); err != nil {
		return nil, fmt.Errorf("index instances: %w", err)
	}
	if _, err := vmiInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, cur any) {
			metrics.ObservePhaseTransition(old.(*v1.VirtualMachineInstance), cur.(*v1.VirtualMachineInstance))
			recordTransitions(c.recorder, old.(*v1.VirtualMachineInstance), cur.(*v1.VirtualMachineInstance))
			c.enqueue(cur)
		},
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ref, ns, ok := launcherOwner(obj); ok {
				c.expectations.CreationObserved(string(ref.UID))
				c.queue.Add(ns + "/" + ref.Name)
			}
		},
		UpdateFunc: func(old, cur any) {
			c.enqueueOwner(old)
			c.enqueueOwner(cur)
		},
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return nil, err
	}
	// Only a claim that appears matters: an instance waits for its claims before it gets a pod,
	// and a claim's volumeMode never changes.
	if _, err := pvcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueClaimants,
	}); err != nil {
		return nil, err
	}
	// A node whose readiness changes may have instances to fail (nodes.go).
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: c.enqueueNodeInstances,
		DeleteFunc: c.enqueueNodeDeleted,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) { controllerutil.Enqueue(c.queue, obj) }

// enqueueClaimants enqueues the instances that name a claim.
func (c *Controller) enqueueClaimants(obj any) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return
	}
	vmis, err := c.vmiIndexer.ByIndex(vmisByClaimIndex, o.GetNamespace()+"/"+o.GetName())
	if err != nil {
		return
	}
	for _, vmi := range vmis {
		c.enqueue(vmi)
	}
}

func indexByClaim(obj any) ([]string, error) {
	vmi, ok := obj.(*v1.VirtualMachineInstance)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, name := range launcherpod.ClaimNames(vmi) {
		keys = append(keys, vmi.Namespace+"/"+name)
	}
	return keys, nil
}

func (c *Controller) enqueueOwner(obj any) {
	if ref, ns, ok := launcherOwner(obj); ok {
		c.queue.Add(ns + "/" + ref.Name)
	}
}

// launcherOwner is the instance that controls a pod, tombstones included.
func launcherOwner(obj any) (*metav1.OwnerReference, string, bool) {
	o, ok := controllerutil.Object(obj)
	if !ok {
		return nil, "", false
	}
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "VirtualMachineInstance" || ref.APIVersion != v1.SchemeGroupVersion.String() {
		return nil, "", false
	}
	return ref, o.GetNamespace(), true
}

func indexByOwner(obj any) ([]string, error) {
	if ref, ns, ok := launcherOwner(obj); ok {
		return []string{ns + "/" + ref.Name}, nil
	}
	return nil, nil
}

// Run starts workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	klog.InfoS("Starting controller", "controller", "vmi")
	if !cache.WaitForNamedCacheSync("vmi", ctx.Done(), c.synced...) {
		return fmt.Errorf("vmi controller: caches did not sync")
	}
	controllerutil.RunWorkers(ctx, "vmi", c.queue, workers, c.sync)
	return nil
}

// podsFor returns the launcher pods of the instance named key, split into those controlled by
// the instance with the given UID and those left from an earlier instance of the same name.
func (c *Controller) podsFor(key string, uid types.UID) (own, stale []*corev1.Pod, err error) {
	objs, err := c.podIndexer.ByIndex(podsByOwnerIndex, key)
	if err != nil {
		return nil, nil, err
	}
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.UID == uid && uid != "" {
			own = append(own, pod)
		} else {
			stale = append(stale, pod)
		}
	}
	return own, stale, nil
}
