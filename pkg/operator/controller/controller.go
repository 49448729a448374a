// Package controller is hangar-operator's controller, in the shape of sample-controller: it
// watches the Hangar object and every object it owns, and one worker reconciles the one key
// there is. A reconcile checks the cluster (preflight), keeps the PKI, applies the components
// phase by phase (each once the one before is rolled out), prunes what an older version left,
// and writes the object's status; deleting the object removes Hangar.
package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	aggregatorlisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"

	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	kubevirtclient "github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	operatorclient "github.com/hangarvm/hangar/pkg/generated/operator/clientset/versioned"
	operatorscheme "github.com/hangarvm/hangar/pkg/generated/operator/clientset/versioned/scheme"
	operatorinformers "github.com/hangarvm/hangar/pkg/generated/operator/informers/externalversions"
	operatorlisters "github.com/hangarvm/hangar/pkg/generated/operator/listers/operator/v1alpha1"
	"github.com/hangarvm/hangar/pkg/operator/apply"
	"github.com/hangarvm/hangar/pkg/operator/preflight"
	"github.com/hangarvm/hangar/pkg/operator/render"
)

// Finalizer holds the Hangar object until removal is done.
const Finalizer = "hangarvm.io/uninstall"

// key is the work queue's only key: there is one installation.
const key = operatorv1alpha1.Name

// Clients are the API clients the operator uses.
type Clients struct {
	Kube          kubernetes.Interface
	Dynamic       dynamic.Interface
	Operator      operatorclient.Interface
	Aggregator    aggregatorclient.Interface
	APIExtensions apiextensionsclient.Interface
	// KubeVirt reaches virt-api (through kube-apiserver), to find and remove workloads.
	KubeVirt kubevirtclient.Interface
}

// Config is what the operator installs.
type Config struct {
	// Version is the operator's own, which it installs.
	Version string
	Images  render.Images
	// Resync bounds how long the operator goes without a reconcile (certificates, the KVM
	// check).
	Resync time.Duration
}

// Controller reconciles the Hangar object.
type Controller struct {
	clients Clients
	config  Config
	applier *apply.Applier
	now     func() time.Time

	hangars      operatorlisters.HangarLister
	deployments  appslisters.DeploymentLister
	daemonSets   appslisters.DaemonSetLister
	statefulSets appslisters.StatefulSetLister
	configMaps   corelisters.ConfigMapLister
	secrets      corelisters.SecretLister
	apiServices  aggregatorlisters.APIServiceLister
	synced       []cache.InformerSynced

	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	start    func(stop <-chan struct{})
}

// managedSelector selects the operator's objects.
var managedSelector = render.ManagedByLabel + "=" + render.ManagedBy

// New wires the controller's informers; Run starts them.
func New(clients Clients, config Config) (*Controller, error) {
	if err := config.Images.Validate(); err != nil {
		return nil, err
	}
	if config.Resync == 0 {
		config.Resync = 10 * time.Minute
	}
	hangarInformers := operatorinformers.NewSharedInformerFactory(clients.Operator, config.Resync)
	kubeInformers := kubeinformers.NewSharedInformerFactoryWithOptions(clients.Kube, config.Resync,
		kubeinformers.WithNamespace(render.Namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = managedSelector }))
	aggregatorInformers := aggregatorinformers.NewSharedInformerFactoryWithOptions(clients.Aggregator, config.Resync,
		aggregatorinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = managedSelector }))

	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clients.Kube.CoreV1().Events("")})
	c := &Controller{
		clients: clients,
		config:  config,
		applier: &apply.Applier{Client: clients.Dynamic, Scheme: render.Scheme(), Namespace: render.Namespace, Selector: managedSelector},
		now:     time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "hangar-operator"}),
		recorder: broadcaster.NewRecorder(operatorscheme.Scheme, corev1.EventSource{Component: "hangar-operator"}),
	}
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { c.queue.Add(key) },
		UpdateFunc: func(interface{}, interface{}) { c.queue.Add(key) },
		DeleteFunc: func(interface{}) { c.queue.Add(key) },
	}
	for _, informer := range []cache.SharedIndexInformer{
		hangarInformers.Hangarvm().V1alpha1().Hangars().Informer(),
		kubeInformers.Apps().V1().Deployments().Informer(),
		kubeInformers.Apps().V1().DaemonSets().Informer(),
		kubeInformers.Apps().V1().StatefulSets().Informer(),
		kubeInformers.Core().V1().ConfigMaps().Informer(),
		kubeInformers.Core().V1().Secrets().Informer(),
		aggregatorInformers.Apiregistration().V1().APIServices().Informer(),
	} {
		if _, err := informer.AddEventHandler(enqueue); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, informer.HasSynced)
	}
	c.hangars = hangarInformers.Hangarvm().V1alpha1().Hangars().Lister()
	c.deployments = kubeInformers.Apps().V1().Deployments().Lister()
	c.daemonSets = kubeInformers.Apps().V1().DaemonSets().Lister()
	c.statefulSets = kubeInformers.Apps().V1().StatefulSets().Lister()
	c.configMaps = kubeInformers.Core().V1().ConfigMaps().Lister()
	c.secrets = kubeInformers.Core().V1().Secrets().Lister()
	c.apiServices = aggregatorInformers.Apiregistration().V1().APIServices().Lister()
	c.start = func(stop <-chan struct{}) {
		hangarInformers.Start(stop)
		kubeInformers.Start(stop)
		aggregatorInformers.Start(stop)
	}
	return c, nil
}

// Run reconciles until ctx ends. One worker: there is one object, and its reconcile must not
// race with itself.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	c.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("informers did not sync")
	}
	klog.InfoS("hangar-operator reconciling", "version", c.config.Version)
	c.queue.Add(key)
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for c.processNext(ctx) {
		}
	}, time.Second)
	<-ctx.Done()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	k, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(k)
	after, err := c.sync(ctx)
	switch {
	case err != nil:
		klog.ErrorS(err, "reconcile failed; retrying")
		c.queue.AddRateLimited(k)
	default:
		c.queue.Forget(k)
		if after > 0 {
			c.queue.AddAfter(k, after)
		}
	}
	return true
}

// sync reconciles the Hangar object and says when to look again (0: on the next event).
func (c *Controller) sync(ctx context.Context) (time.Duration, error) {
	h, err := c.hangars.Get(key)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	h = h.DeepCopy()
	if h.DeletionTimestamp != nil {
		return c.uninstall(ctx, h)
	}
	if !hasFinalizer(h) {
		h.Finalizers = append(h.Finalizers, Finalizer)
		_, err := c.clients.Operator.HangarvmV1alpha1().Hangars().Update(ctx, h, metav1.UpdateOptions{})
		return 0, err
	}
	return c.install(ctx, h)
}

func hasFinalizer(h *operatorv1alpha1.Hangar) bool {
	for _, f := range h.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

// ours says whether an APIService is the operator's.
func ours(labels map[string]string) bool { return labels[render.ManagedByLabel] == render.ManagedBy }

// preflightClients are the clients of the preflight checks.
func (c *Controller) preflightClients() preflight.Clients {
	return preflight.Clients{Kube: c.clients.Kube, APIExtensions: c.clients.APIExtensions, Aggregator: c.clients.Aggregator}
}
