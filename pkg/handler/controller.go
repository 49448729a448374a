// Package handler is virt-handler, the node agent: it takes over each instance scheduled to
// its node, hands it to the instance's launcher (after preparing what the launcher cannot:
// the pod network), reports the guest's state in the instance's status, serves
// consoles, VNC and guest commands to virt-api, and offers the KVM and TUN devices to
// kubelet.
package handler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	informers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	listers "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/podfiles"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/pkg/podnetwork"
	"github.com/hangarvm/hangar/pkg/podnetwork/setup"
)

// Config is a handler's node and how it reaches launcher pods.
type Config struct {
	NodeName string
	// Pods is the kubelet's pods directory, where each launcher pod's socket volume is.
	Pods *podsockets.Root
	// SetupNetwork makes the handler set up each launcher's pod network (bridge, tap, NAT)
	// in the launcher's network namespace before Sync; the launcher cannot (no NET_ADMIN).
	SetupNetwork bool
	// Resync is the informer resync period.
	Resync time.Duration
	// Migration is this node's migration identity; nil: no live migration into or out of
	// this node.
	Migration *MigrationTLS
	// QEMUCapabilities is libvirt's capabilities file of QEMU, probed once on this node by the
	// handler pod's init container; each launcher seeds its libvirt's cache with it instead
	// of probing QEMU again. Empty: the launchers probe.
	QEMUCapabilities string
	// Files opens hotplugged claims' files in their attachment pods; nil: no hotplug.
	Files *podfiles.Opener
	// Calls bounds the calls to launchers in flight, per instance and on the node, which the
	// controller and the Server share; nil: api.DefaultCallsPerInstance and
	// api.DefaultAnswersPerNode.
	Calls *api.CallLimits
}

// Controller keeps instances on this node and their launchers in step.
type Controller struct {
	cfg      Config
	client   versioned.Interface
	informer cache.SharedIndexInformer
	lister   listers.VirtualMachineInstanceLister
	queue    workqueue.TypedRateLimitingInterface[string]
	factory  informers.SharedInformerFactory
	now      func() metav1.Time

	sockets *Sockets
	// watch wakes a sync when a launcher's socket appears; nil: look again every
	// launcherSocketRecheck (inotify unavailable).
	watch *socketWatch

	// The instances migrating to this node (migration.go), when cfg.Migration is set.
	targetFactory  informers.SharedInformerFactory
	targetInformer cache.SharedIndexInformer
	targetLister   listers.VirtualMachineInstanceLister
	targetQueue    workqueue.TypedRateLimitingInterface[string]

	mu        sync.Mutex
	launchers map[string]*launcher          // by namespace/name
	targets   map[string]*migrationTarget   // instances migrating here, by namespace/name
	outgoing  map[string]*outgoingMigration // migrations out of this node, by namespace/name
	ctx       context.Context
}

// Calls are the limits on calls to launchers, for the Server to share.
func (c *Controller) Calls() *api.CallLimits { return c.cfg.Calls }

// NewController watches the instances whose status.nodeName is this node.
func NewController(cfg Config, client versioned.Interface) *Controller {
	factory := informers.NewSharedInformerFactoryWithOptions(client, cfg.Resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("status.nodeName", cfg.NodeName).String()
		}))
	inf := factory.Kubevirt().V1().VirtualMachineInstances()
	if cfg.Calls == nil {
		cfg.Calls = api.NewCallLimits(api.DefaultCallsPerInstance, api.DefaultAnswersPerNode)
	}
	c := &Controller{
		cfg: cfg, client: client, factory: factory,
		informer:  inf.Informer(),
		lister:    inf.Lister(),
		queue:     workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "virt-handler"}),
		now:       metav1.Now,
		sockets:   &Sockets{Pods: cfg.Pods, NodeName: cfg.NodeName},
		launchers: map[string]*launcher{},
		targets:   map[string]*migrationTarget{},
		outgoing:  map[string]*outgoingMigration{},
	}
	if w, err := newSocketWatch(); err != nil {
		klog.ErrorS(err, "no socket watch; launchers' sockets are looked for every", "interval", launcherSocketRecheck)
	} else {
		c.watch = w
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	})
	if cfg.Migration != nil {
		c.targetFactory = informers.NewSharedInformerFactoryWithOptions(client, cfg.Resync,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector(TargetNodeField, cfg.NodeName).String()
			}))
		tinf := c.targetFactory.Kubevirt().V1().VirtualMachineInstances()
		c.targetInformer, c.targetLister = tinf.Informer(), tinf.Lister()
		c.targetQueue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "virt-handler-migration-targets"})
		enqueueTarget := func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.targetQueue.Add(key)
			}
		}
		_, _ = c.targetInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: enqueueTarget, UpdateFunc: func(_, obj any) { enqueueTarget(obj) }, DeleteFunc: enqueueTarget,
		})
	}
	return c
}

// baseContext is Run's context (background before Run).
func (c *Controller) baseContext() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// Lister reads instances on this node from the cache.
func (c *Controller) Lister() listers.VirtualMachineInstanceLister { return c.lister }

// Run syncs instances with workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	if c.watch != nil {
		go c.watch.run(ctx)
	}
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return errors.New("instance cache did not sync")
	}
	klog.InfoS("virt-handler watching instances", "node", c.cfg.NodeName)
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNext(ctx, c.queue, c.sync) {
			}
		}, time.Second)
	}
	if c.targetQueue != nil {
		defer c.targetQueue.ShutDown()
		c.targetFactory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), c.targetInformer.HasSynced) {
			return errors.New("migration target cache did not sync")
		}
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNext(ctx, c.targetQueue, c.syncTarget) {
			}
		}, time.Second)
	}
	<-ctx.Done()
	c.mu.Lock()
	for _, l := range c.launchers {
		l.stop() // the guests keep running; a new handler picks them up
	}
	c.mu.Unlock()
	return nil
}

func (c *Controller) processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) (time.Duration, error)) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	requeue, err := sync(ctx, key)
	switch {
	case err != nil:
		klog.ErrorS(err, "sync instance", "vmi", key)
		queue.AddRateLimited(key)
	case requeue > 0:
		queue.Forget(key)
		queue.AddAfter(key, requeue)
	default:
		queue.Forget(key)
	}
	return true
}

// launcherSocketRecheck is how often the handler looks for a starting launcher's socket
// directory (the kubelet makes it within moments of the pod's binding), and for its socket
// when inotify is unavailable: every look is one stat, and the guest cannot start before the
// socket is found, so look often. launcherSocketSafetyRecheck is the look that backs a
// socket watch up, which should never find what the watch missed.
const (
	launcherSocketRecheck       = 100 * time.Millisecond
	launcherSocketSafetyRecheck = 10 * time.Second
)

// awaitSocket arranges for wake to run when l's command socket appears and says how long
// until the sync should look again regardless.
func (c *Controller) awaitSocket(l *launcher, wake func()) time.Duration {
	if c.watch == nil {
		return launcherSocketRecheck
	}
	l.mu.Lock()
	if l.unwatch == nil {
		remove, err := c.watch.add(l.dir, wake)
		if err != nil {
			l.mu.Unlock()
			klog.ErrorS(err, "watch launcher socket; looking for it instead", "vmi", l.key)
			return launcherSocketRecheck
		}
		l.unwatch = remove
	}
	l.mu.Unlock()
	if l.socketPresent() { // it came before the watch did
		wake()
	}
	return launcherSocketSafetyRecheck
}

// launcherFor returns the tracked launcher of key for the instance vmi, opening its pod's
// socket directory the first time. It fails while the pod or its volume is not there yet.
func (c *Controller) launcherFor(key string, vmi *v1.VirtualMachineInstance) (*launcher, error) {
	c.mu.Lock()
	l, ok := c.launchers[key]
	c.mu.Unlock()
	podUID, err := c.sockets.PodUID(vmi)
	if err != nil {
		return nil, err
	}
	if ok && l.uid == vmi.UID && l.dir.PodUID() == podUID {
		return l, nil
	}
	dir, err := c.sockets.Pods.Dir(podUID, layout.SocketVolume)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.launchers[key]; ok {
		old.stop() // an old instance of the same name, or its old pod
	}
	l = newLauncher(key, vmi.UID, dir, c.cfg.Calls)
	c.launchers[key] = l
	return l, nil
}

func (c *Controller) forget(key string) {
	c.stopOutgoing(key)
	c.mu.Lock()
	l := c.launchers[key]
	delete(c.launchers, key)
	c.mu.Unlock()
	if l != nil {
		l.stop()
	}
}

// sync brings one instance's launcher and status in step; a positive duration asks to be
// called again after it.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	vmi, err := c.lister.VirtualMachineInstances(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		l := c.launchers[key]
		c.mu.Unlock()
		if l == nil {
			return 0, nil
		}
		l.mu.Lock()
		stopping := l.stopping
		l.stopping = true
		l.mu.Unlock()
		if !stopping && !l.State().Phase.Final() {
			// The instance is gone: so must its guest be (its pod follows by garbage
			// collection, and the kubelet removes the pod's socket volume).
			_, _ = l.client.Shutdown(ctx, nil)
		}
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if isFinal(vmi.Status.Phase) {
		c.forget(key)
		return 0, nil
	}
	if vmi.Status.Phase != v1.Scheduled && vmi.Status.Phase != v1.Running {
		return 0, nil
	}
	l, err := c.launcherFor(key, vmi)
	if err != nil {
		// The pod is not bound here yet, or the kubelet has not made its volumes: wait. A pod
		// that never comes is virt-controller's to notice.
		klog.V(4).InfoS("launcher pod not ready", "vmi", key, "err", err)
		return launcherSocketRecheck, nil
	}
	if !l.socketPresent() {
		// The launcher pod is still starting (or gone: the controller sees its pod fail).
		return c.awaitSocket(l, func() { c.queue.Add(key) }), nil
	}

	l.mu.Lock()
	synced := l.synced
	l.mu.Unlock()
	if !synced {
		if err := c.syncLauncher(ctx, vmi, l); err != nil {
			return 0, err
		}
	}
	if vmi.DeletionTimestamp != nil {
		// The guest gets the instance's terminationGracePeriodSeconds, as in KubeVirt; a stop
		// with a shorter grace period rewrites it, and it is sent again. (deletionGracePeriod-
		// Seconds is always 0: the API has no graceful deletion for instances.)
		grace := vmi.Spec.TerminationGracePeriodSeconds
		l.mu.Lock()
		send := !l.stopping || !ptr.Equal(l.stopGrace, grace)
		l.mu.Unlock()
		if send {
			if _, err := l.client.Shutdown(ctx, grace); err != nil {
				return 0, fmt.Errorf("shut down guest: %w", err)
			}
			l.mu.Lock()
			l.stopping, l.stopGrace = true, grace
			l.mu.Unlock()
		}
	}
	if vmi.DeletionTimestamp == nil && vmi.Status.Phase == v1.Running {
		if err := c.syncHotplug(ctx, vmi, l); err != nil {
			klog.ErrorS(err, "hotplug", "vmi", key)
			return launcherSocketRecheck, nil // the attachment pod's process may be starting
		}
	}
	requeue, err := c.syncOutgoing(ctx, key, vmi, l)
	if err != nil {
		return 0, err
	}
	return requeue, c.updateStatus(ctx, vmi, l.State())
}

// syncLauncher hands the instance to its launcher once, after setting up the pod network
// (unless the launcher runs the guest already: a restarted handler), then follows the
// launcher's events. The instance goes as it is: the launcher reads the Secrets of its
// cloud-init from its pod's volumes.
func (c *Controller) syncLauncher(ctx context.Context, vmi *v1.VirtualMachineInstance, l *launcher) error {
	state, err := l.client.State(ctx)
	if err == nil {
		err = checkState(state, vmi.UID)
	}
	if err != nil {
		return fmt.Errorf("launcher state: %w", err)
	}
	if state.Phase == "" {
		if c.cfg.SetupNetwork && len(vmi.Spec.Domain.Devices.Interfaces) > 0 {
			if err := c.setupNetwork(ctx, vmi, l); err != nil {
				return fmt.Errorf("pod network: %w", err)
			}
		}
		if state, err = l.client.Sync(ctx, api.SyncRequest{VMI: vmi, QEMUCapabilities: c.cfg.QEMUCapabilities}); err == nil {
			err = checkState(state, vmi.UID)
		}
		if err != nil {
			klog.ErrorS(err, "launcher sync", "vmi", l.key)
			// A launcher that could not start the guest reports it as a final state too.
			if s, serr := l.client.State(ctx); serr == nil && checkState(s, vmi.UID) == nil && s.Phase.Final() {
				state = s
			} else {
				return fmt.Errorf("launcher sync: %w", err)
			}
		}
	}
	l.setState(state)
	l.mu.Lock()
	l.synced = true
	l.mu.Unlock()
	c.mu.Lock()
	watchCtx := c.ctx
	c.mu.Unlock()
	if watchCtx == nil {
		watchCtx = context.Background()
	}
	l.watch(watchCtx, func() { c.queue.Add(l.key) })
	return nil
}

// setupNetwork runs the privileged part of the bindings in the launcher's network
// namespace: that of the process behind the launcher's socket, once podsockets has verified
// it is a process of the launcher pod.
func (c *Controller) setupNetwork(ctx context.Context, vmi *v1.VirtualMachineInstance, l *launcher) error {
	plans, err := podnetwork.Plans(vmi)
	if err != nil {
		return err
	}
	conn, err := l.dir.Dial(api.SocketName)
	if err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	defer conn.Close()
	netns, err := conn.Peer.NetNS()
	if err != nil {
		return err
	}
	defer netns.Close()
	_, err = setup.Pod(ctx, netns, plans)
	return err
}

// updateStatus writes the status the launcher's state implies, if it differs.
func (c *Controller) updateStatus(ctx context.Context, vmi *v1.VirtualMachineInstance, st api.State) error {
	status := nextStatus(vmi, st, c.now())
	if equality.Semantic.DeepEqual(status, vmi.Status) {
		return nil
	}
	update := vmi.DeepCopy()
	update.Status = status
	if _, err := c.client.KubevirtV1().VirtualMachineInstances(vmi.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	klog.InfoS("instance status", "vmi", klog.KObj(vmi), "phase", status.Phase, "reason", status.Reason, "launcher", st.Phase)
	return nil
}
