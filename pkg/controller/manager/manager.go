// Package manager runs virt-controller's controllers together: shared informers, the cluster
// configuration, the event recorder and the controllers. cmd/virt-controller runs it
// under leader election; tests and benchmarks run it directly.
package manager

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	snapshotclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	vsinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	_ "k8s.io/component-base/metrics/prometheus/restclient" // REST client metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"  // workqueue metrics, before any queue exists
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	configwatch "github.com/hangarvm/hangar/pkg/clusterconfig/watch"
	"github.com/hangarvm/hangar/pkg/controller/clone"
	"github.com/hangarvm/hangar/pkg/controller/evacuation"
	"github.com/hangarvm/hangar/pkg/controller/export"
	"github.com/hangarvm/hangar/pkg/controller/metrics"
	"github.com/hangarvm/hangar/pkg/controller/migration"
	"github.com/hangarvm/hangar/pkg/controller/migrationsigner"
	"github.com/hangarvm/hangar/pkg/controller/replicaset"
	"github.com/hangarvm/hangar/pkg/controller/snapshot"
	"github.com/hangarvm/hangar/pkg/controller/vm"
	"github.com/hangarvm/hangar/pkg/controller/vmi"
	"github.com/hangarvm/hangar/pkg/controller/workloadupdate"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	kvscheme "github.com/hangarvm/hangar/pkg/generated/clientset/versioned/scheme"
	cloneclient "github.com/hangarvm/hangar/pkg/generated/clone/clientset/versioned"
	clonescheme "github.com/hangarvm/hangar/pkg/generated/clone/clientset/versioned/scheme"
	cloneinformers "github.com/hangarvm/hangar/pkg/generated/clone/informers/externalversions"
	exportclient "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned"
	exportscheme "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned/scheme"
	exportinformers "github.com/hangarvm/hangar/pkg/generated/export/informers/externalversions"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
	vmsnapshotclient "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned"
	snapshotscheme "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned/scheme"
	vmsnapshotinformers "github.com/hangarvm/hangar/pkg/generated/snapshot/informers/externalversions"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

func init() {
	// Events name kubevirt.io, snapshot.kubevirt.io, clone.kubevirt.io and export.kubevirt.io
	// objects: the recorder must know their kinds, or it drops the events.
	for _, add := range []func(*runtime.Scheme) error{kvscheme.AddToScheme, snapshotscheme.AddToScheme, clonescheme.AddToScheme, exportscheme.AddToScheme} {
		utilruntime.Must(add(scheme.Scheme))
	}
}

// Options configure the controllers.
type Options struct {
	// ConfigNamespace and ConfigName locate the cluster configuration ConfigMap.
	ConfigNamespace, ConfigName string
	// Defaults apply where the ConfigMap says nothing.
	Defaults clusterconfig.ClusterConfig
	// Workers per controller.
	VMWorkers, VMIWorkers, ReplicaSetWorkers int
	// Resync is the informers' resync period (0: none).
	Resync time.Duration
	// Migration finds the handlers' migration proxies.
	Migration migration.Options
	// MigrationCA issues the nodes' migration identities (nil: none are issued, and no
	// handler can carry a migration).
	MigrationCA *migrationsigner.CA
	// HandlerUsers are virt-handler's ServiceAccount user names, whose identity requests the
	// signer answers.
	HandlerUsers []string
	// Instancetypes reaches instancetype.kubevirt.io, for the revisions of the instance
	// types and preferences VMs name; nil: no revisions are kept and VMs' instances are
	// made from their templates as written.
	Instancetypes instancetypeclient.Interface
	// Snapshots reaches snapshot.kubevirt.io and VolumeSnapshots snapshot.storage.k8s.io, for
	// the snapshot and restore controllers; they run when both are set and the cluster serves
	// snapshot.storage.k8s.io/v1 (its CRDs installed).
	Snapshots       vmsnapshotclient.Interface
	VolumeSnapshots snapshotclient.Interface
	// Clones reaches clone.kubevirt.io, for the clone controller; it runs with the snapshot
	// and restore controllers it relies on.
	Clones cloneclient.Interface
	// Exports reaches export.kubevirt.io, for the export controller (nil: it does not run).
	Exports exportclient.Interface
	// Dynamic reaches CDI's DataVolumes (cdi.kubevirt.io), which the VM controller creates,
	// watches and waits for when the cluster serves them; nil: VMs using DataVolumes are not
	// started.
	Dynamic dynamic.Interface
	// OptionalAPIsInterval is how often discovery is asked whether CDI's DataVolumes and
	// Kubernetes' VolumeSnapshots are served (optionalapis.go); 0: only at the start.
	OptionalAPIsInterval time.Duration
}

// DefaultOptions are KubeVirt's worker counts and the default configuration.
func DefaultOptions() Options {
	return Options{ConfigNamespace: "hangar", ConfigName: "hangar-config", Defaults: clusterconfig.Defaults(),
		VMWorkers: 3, VMIWorkers: 10, ReplicaSetWorkers: 3, Resync: 10 * time.Minute,
		Migration: migration.Options{
			HandlerNamespace: "hangar", HandlerPort: 18187,
			HandlerSelector: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "virt-handler"}),
		},
		HandlerUsers:         []string{"system:serviceaccount:hangar:virt-handler"},
		OptionalAPIsInterval: 30 * time.Second,
	}
}

// Run runs the controllers until ctx ends. kubevirt reaches the kubevirt.io API (through
// kube-apiserver in a cluster), kube the core API (pods, events, the ConfigMap). When the
// optional APIs the cluster serves change, the controllers are started again with the new set
// (optionalapis.go).
func Run(ctx context.Context, kubevirt versioned.Interface, kube kubernetes.Interface, o Options) error {
	for {
		apis, err := probeOptionalAPIs(kube.Discovery(), o)
		if err != nil {
			klog.InfoS("optional APIs not probed: starting without them, and asking again", "err", err)
		}
		klog.InfoS("starting the controllers", "optionalAPIs", apis.String())
		err = run(ctx, kubevirt, kube, o, apis)
		if !errors.Is(err, errOptionalAPIsChanged) {
			return err
		}
		klog.InfoS("restarting the controllers: the optional APIs the cluster serves changed")
	}
}

// run runs the controllers that apis allow until ctx ends or apis change.
func run(ctx context.Context, kubevirt versioned.Interface, kube kubernetes.Interface, o Options, apis optionalAPIs) error {
	metrics.Register()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var apisChanged atomic.Bool
	if o.OptionalAPIsInterval > 0 {
		go watchOptionalAPIs(ctx, kube.Discovery(), o, apis, o.OptionalAPIsInterval, func(now optionalAPIs) {
			klog.InfoS("the optional APIs the cluster serves changed", "now", now.String())
			apisChanged.Store(true)
			cancel()
		})
	}
	cfg := clusterconfig.NewStore(o.Defaults)
	if err := configwatch.Watch(ctx, cfg, kube, o.ConfigNamespace, o.ConfigName); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before the configuration was read
		}
		return fmt.Errorf("watch cluster configuration: %w", err)
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "virt-controller"})

	kvFactory := kvinformers.NewSharedInformerFactoryWithOptions(kubevirt, o.Resync,
		kvinformers.WithTransform(stripManagedFields))
	// Only launcher pods: the controller's memory must not grow with the cluster's other pods.
	podFactory := informers.NewSharedInformerFactoryWithOptions(kube, o.Resync,
		informers.WithTransform(stripManagedFields),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = labels.Set{v1.AppLabel: v1.LauncherAppLabelValue}.String()
		}))
	// Claims in every namespace: an instance's launcher pod mounts or maps each claim by its
	// volumeMode.
	kubeFactory := informers.NewSharedInformerFactoryWithOptions(kube, o.Resync, informers.WithTransform(stripManagedFields))
	vmInformer := kvFactory.Kubevirt().V1().VirtualMachines()
	vmiInformer := kvFactory.Kubevirt().V1().VirtualMachineInstances()
	rsInformer := kvFactory.Kubevirt().V1().VirtualMachineInstanceReplicaSets()
	podInformer := podFactory.Core().V1().Pods()
	pvcInformer := kubeFactory.Core().V1().PersistentVolumeClaims()

	metrics.SetListers(&metrics.Listers{VMIs: vmiInformer.Lister(), VMs: vmInformer.Lister()})
	defer metrics.SetListers(nil)

	vmController, err := vm.New(kubevirt, vmInformer, vmiInformer, recorder)
	if err != nil {
		return err
	}
	vmController.EnableStateClaims(kube, pvcInformer, func() string { return cfg.Get().VMStateStorageClass })
	if o.Instancetypes != nil {
		rc := kubevirt.KubevirtV1().RESTClient()
		vmController.EnableInstancetypes(kube, o.Instancetypes, vm.ExpandWith(func(ctx context.Context, namespace, name string) ([]byte, error) {
			return rc.Get().Namespace(namespace).Resource("virtualmachines").Name(name).SubResource("expand-spec").
				SetHeader("Accept", "application/json").DoRaw(ctx)
		}))
	}
	var dvFactory dynamicinformer.DynamicSharedInformerFactory
	if o.Dynamic != nil {
		if apis.dataVolumes {
			dvFactory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(o.Dynamic, o.Resync, metav1.NamespaceAll, nil)
			if err := vmController.EnableDataVolumes(o.Dynamic, dvFactory.ForResource(vm.DataVolumesGVR), pvcInformer.Lister()); err != nil {
				return err
			}
		} else {
			klog.InfoS("cdi.kubevirt.io/v1beta1 datavolumes are not served (CDI not installed): VMs using DataVolumes wait until they are")
		}
	}
	vmiController, err := vmi.New(kubevirt, kube, vmiInformer, podInformer, pvcInformer, kubeFactory.Core().V1().Nodes(), cfg, recorder)
	if err != nil {
		return err
	}
	// Attachment pods of hotplugged volumes, apart from launcher pods (docs/hotplug.md).
	attachmentFactory := informers.NewSharedInformerFactoryWithOptions(kube, o.Resync,
		informers.WithTransform(stripManagedFields),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = labels.Set{v1.AppLabel: launcherpod.HotplugAppLabelValue}.String()
		}))
	if err := vmiController.EnableHotplug(attachmentFactory.Core().V1().Pods()); err != nil {
		return err
	}
	if dvFactory != nil {
		if err := vmiController.EnableDataVolumes(dvFactory.ForResource(vm.DataVolumesGVR)); err != nil {
			return err
		}
	}
	rsController, err := replicaset.New(kubevirt, rsInformer, vmiInformer, recorder)
	if err != nil {
		return err
	}
	evacuationController, err := evacuation.New(kubevirt, vmiInformer, kvFactory.Kubevirt().V1().VirtualMachineInstanceMigrations(), cfg, recorder)
	if err != nil {
		return err
	}
	updater, err := workloadupdate.New(kubevirt, vmiInformer, kvFactory.Kubevirt().V1().VirtualMachineInstanceMigrations(), podInformer, cfg, recorder)
	if err != nil {
		return err
	}
	cfg.OnChange(updater.ConfigChanged)
	// virt-handler pods, for the address of each node's migration proxy.
	handlerFactory := informers.NewSharedInformerFactoryWithOptions(kube, o.Resync,
		informers.WithNamespace(o.Migration.HandlerNamespace),
		informers.WithTransform(stripManagedFields),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = o.Migration.HandlerSelector.String() }))
	migController, err := migration.New(kubevirt, kube, kvFactory.Kubevirt().V1().VirtualMachineInstanceMigrations(),
		vmiInformer, podInformer, handlerFactory.Core().V1().Pods(), pvcInformer, cfg, recorder, o.Migration)
	if err != nil {
		return err
	}
	runners := []func() error{
		func() error { return vmController.Run(ctx, o.VMWorkers) },
		func() error { return vmiController.Run(ctx, o.VMIWorkers) },
		func() error { return rsController.Run(ctx, o.ReplicaSetWorkers) },
		func() error { return migController.Run(ctx, 3) },
		func() error { return evacuationController.Run(ctx) },
		func() error { return updater.Run(ctx) },
	}
	var exportFactories []interface {
		Start(<-chan struct{})
		Shutdown()
	}
	if o.Exports != nil {
		exportFactory := exportinformers.NewSharedInformerFactoryWithOptions(o.Exports, o.Resync, exportinformers.WithTransform(stripManagedFields))
		// Export servers' pods and Services only.
		serverFactory := informers.NewSharedInformerFactoryWithOptions(kube, o.Resync,
			informers.WithTransform(stripManagedFields),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = export.ServerSelector() }))
		exportController, err := export.New(export.Clients{Exports: o.Exports, Kube: kube}, export.Informers{
			Exports: exportFactory.Export().V1beta1().VirtualMachineExports(),
			Pods:    serverFactory.Core().V1().Pods(), Services: serverFactory.Core().V1().Services(),
			Claims: pvcInformer, VMs: vmInformer, VMIs: vmiInformer,
		}, func() string { return cfg.Get().LauncherImage }, recorder)
		if err != nil {
			return err
		}
		runners = append(runners, func() error { return exportController.Run(ctx, 2) })
		exportFactories = append(exportFactories, exportFactory, serverFactory)
	}
	var snapshotFactories []interface {
		Start(<-chan struct{})
		Shutdown()
	}
	if o.Snapshots != nil && o.VolumeSnapshots != nil {
		if !apis.volumeSnapshots {
			klog.InfoS("snapshot.storage.k8s.io/v1 volumesnapshots are not served (no VolumeSnapshot CRDs): VirtualMachineSnapshots, restores and clones wait until they are")
		} else {
			vmsFactory := vmsnapshotinformers.NewSharedInformerFactoryWithOptions(o.Snapshots, o.Resync, vmsnapshotinformers.WithTransform(stripManagedFields))
			vsFactory := vsinformers.NewSharedInformerFactoryWithOptions(o.VolumeSnapshots, o.Resync, vsinformers.WithTransform(stripManagedFields))
			storageFactory := informers.NewSharedInformerFactoryWithOptions(kube, o.Resync, informers.WithTransform(stripManagedFields))
			snapController, err := snapshot.New(snapshot.Clients{KubeVirt: kubevirt, Snapshots: o.Snapshots, VolumeSnapshots: o.VolumeSnapshots, Kube: kube,
				Freezer: snapshot.APIFreezer{Client: kube.Discovery().RESTClient()}},
				snapshot.Informers{
					Snapshots: vmsFactory.Snapshot().V1beta1().VirtualMachineSnapshots(), Contents: vmsFactory.Snapshot().V1beta1().VirtualMachineSnapshotContents(),
					Restores: vmsFactory.Snapshot().V1beta1().VirtualMachineRestores(), VMs: vmInformer, VMIs: vmiInformer,
					VolumeSnapshots: vsFactory.Snapshot().V1().VolumeSnapshots(), VolumeSnapshotClasses: vsFactory.Snapshot().V1().VolumeSnapshotClasses(),
					Claims: pvcInformer, StorageClasses: storageFactory.Storage().V1().StorageClasses(),
				}, recorder)
			if err != nil {
				return err
			}
			runners = append(runners, func() error { return snapController.Run(ctx, 2) })
			snapshotFactories = append(snapshotFactories, vmsFactory, vsFactory, storageFactory)
			if o.Clones != nil {
				cloneFactory := cloneinformers.NewSharedInformerFactoryWithOptions(o.Clones, o.Resync, cloneinformers.WithTransform(stripManagedFields))
				cloneController, err := clone.New(clone.Clients{Clones: o.Clones, Snapshots: o.Snapshots}, clone.Informers{
					Clones: cloneFactory.Clone().V1beta1().VirtualMachineClones(), VMs: vmInformer,
					Snapshots: vmsFactory.Snapshot().V1beta1().VirtualMachineSnapshots(), Contents: vmsFactory.Snapshot().V1beta1().VirtualMachineSnapshotContents(),
					Restores: vmsFactory.Snapshot().V1beta1().VirtualMachineRestores(), Claims: pvcInformer,
				}, recorder)
				if err != nil {
					return err
				}
				runners = append(runners, func() error { return cloneController.Run(ctx, 2) })
				snapshotFactories = append(snapshotFactories, cloneFactory)
			}
		}
	}
	var csrFactory informers.SharedInformerFactory
	if o.MigrationCA != nil {
		csrFactory = informers.NewSharedInformerFactoryWithOptions(kube, o.Resync,
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = migrationsigner.FieldSelector }))
		signer, err := migrationsigner.New(kube, csrFactory.Certificates().V1().CertificateSigningRequests(), o.MigrationCA, o.HandlerUsers...)
		if err != nil {
			return err
		}
		runners = append(runners, func() error { return signer.Run(ctx, 1) })
	} else {
		klog.InfoS("no migration CA: nodes get no migration identity, and no instance can migrate")
	}

	for _, f := range append(snapshotFactories, exportFactories...) {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	if dvFactory != nil {
		dvFactory.Start(ctx.Done())
		defer dvFactory.Shutdown()
	}
	kvFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	attachmentFactory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	handlerFactory.Start(ctx.Done())
	defer handlerFactory.Shutdown()
	if csrFactory != nil {
		csrFactory.Start(ctx.Done())
		defer csrFactory.Shutdown()
	}
	defer kvFactory.Shutdown()
	defer podFactory.Shutdown()
	defer attachmentFactory.Shutdown()
	defer kubeFactory.Shutdown()

	errs := make(chan error, len(runners))
	for _, run := range runners {
		go func() { errs <- run() }()
	}
	klog.InfoS("virt-controller running")
	var first error
	for range runners {
		if err := <-errs; err != nil && first == nil && ctx.Err() == nil {
			first = err // caches that did not sync because ctx ended are no failure
		}
	}
	if first == nil && apisChanged.Load() {
		return errOptionalAPIsChanged
	}
	return first
}

// stripManagedFields drops managedFields from the objects the informers cache: the controllers
// never read them, and they are often the largest part of an object. An update sent from a
// cached copy (managedFields nil) leaves the server's managedFields as they are.
func stripManagedFields(obj any) (any, error) {
	if o, err := meta.Accessor(obj); err == nil && o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}
