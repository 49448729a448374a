// Package podpolicy checks, when an instance is created or a VirtualMachine is started,
// the launcher pod virt-controller will create for it against what kube-apiserver will
// enforce on that pod: pod validation of what only the built pod shows, the namespace's
// LimitRanges, its Pod Security level and its ResourceQuotas. A pod that would be refused
// makes the instance's create (or the VM's start) fail with the same rule named, instead of
// an instance that stays Pending for ever.
//
// The pod is built by virt-controller's own code (pkg/launcherpod) under the
// cluster configuration virt-controller reads (the hangar-config ConfigMap), so the pod
// checked is the pod that will be created. The namespace's state is read from informers:
// namespaces (labels), ResourceQuotas and LimitRanges, all read-only.
package podpolicy

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	configwatch "github.com/hangarvm/hangar/pkg/clusterconfig/watch"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// readyTimeout is how long a request waits for the informers' first lists, as kube's
// admission plugins do.
const readyTimeout = 10 * time.Second

// Refusal is why an instance's launcher pod would be refused.
type Refusal struct {
	// Invalid: the pod would fail pod validation, which kube-apiserver answers with 422; else
	// a policy of the namespace forbids it, which it answers with 403.
	Invalid bool
	// Field is the instance's field the invalid pod field comes from (Invalid only).
	Field []string
	// Value is the offending value (Invalid only).
	Value   string
	Message string
}

// Error is the API error for the refusal of an object of the given resource, kind and name;
// root is where the instance's fields are in the object (nil for an instance, spec.template
// for a VirtualMachine).
func (r *Refusal) Error(resource schema.GroupResource, kind schema.GroupKind, name string, root *field.Path) error {
	if !r.Invalid {
		return apierrors.NewForbidden(resource, name, fmt.Errorf("%s", r.Message))
	}
	path := root
	for _, f := range r.Field {
		if path == nil {
			path = field.NewPath(f)
		} else {
			path = path.Child(f)
		}
	}
	var value any = r.Value
	if r.Value == "" {
		value = field.OmitValueType{}
	}
	return apierrors.NewInvalid(kind, name, field.ErrorList{field.Invalid(path, value, r.Message)})
}

// Checker checks launcher pods. It is safe for concurrent use.
type Checker struct {
	kube        kubernetes.Interface
	namespaces  corelisters.NamespaceLister
	quotas      corelisters.ResourceQuotaLister
	limitRanges corelisters.LimitRangeLister
	synced      []cache.InformerSynced

	config                      *clusterconfig.Store
	configNamespace, configName string
	configSynced                atomic.Pointer[cache.InformerSynced]

	podSecurity *PodSecurity
	inUse       atomic.Bool

	// expand gives the template of a VM that names an instance type or a preference as its
	// instance will have it; nil until ExpandTemplatesWith.
	expand atomic.Pointer[TemplateExpander]
}

// TemplateExpander returns a VM's template expanded with its instance type and preference.
type TemplateExpander func(ctx context.Context, vm *kubevirt.VirtualMachine) (*kubevirt.VirtualMachineInstanceTemplateSpec, error)

// ExpandTemplatesWith makes the checks of a VM see the pod of its expanded template: the
// instance type's CPU and memory, not the template's none.
func (c *Checker) ExpandTemplatesWith(expand TemplateExpander) {
	c.expand.Store(&expand)
}

// Config is what the checker needs besides the cluster's informers.
type Config struct {
	// ConfigNamespace and ConfigName locate virt-controller's cluster configuration.
	ConfigNamespace, ConfigName string
	// PodSecurity evaluates Pod Security levels.
	PodSecurity *PodSecurity
}

// New returns a checker on the shared informers of the cluster (kube-apiserver's core API).
// Run must be called for the cluster configuration to be read.
func New(factory informers.SharedInformerFactory, kube kubernetes.Interface, cfg Config) *Checker {
	ns := factory.Core().V1().Namespaces()
	quotas := factory.Core().V1().ResourceQuotas()
	limitRanges := factory.Core().V1().LimitRanges()
	c := newChecker(kube, ns.Lister(), quotas.Lister(), limitRanges.Lister(), clusterconfig.NewStore(clusterconfig.Defaults()), cfg)
	c.synced = []cache.InformerSynced{ns.Informer().HasSynced, quotas.Informer().HasSynced, limitRanges.Informer().HasSynced}
	return c
}

func newChecker(kube kubernetes.Interface, ns corelisters.NamespaceLister, quotas corelisters.ResourceQuotaLister,
	limitRanges corelisters.LimitRangeLister, store *clusterconfig.Store, cfg Config) *Checker {
	return &Checker{
		kube:            kube,
		namespaces:      ns,
		quotas:          quotas,
		limitRanges:     limitRanges,
		config:          store,
		configNamespace: cfg.ConfigNamespace,
		configName:      cfg.ConfigName,
		podSecurity:     cfg.PodSecurity,
	}
}

// ClusterConfig is the cluster configuration in effect (the defaults until it is read).
func (c *Checker) ClusterConfig() *clusterconfig.ClusterConfig { return c.config.Get() }

// Run starts reading the cluster configuration; it returns at once.
func (c *Checker) Run(ctx context.Context) error {
	synced, err := configwatch.Start(ctx, c.config, c.kube, c.configNamespace, c.configName)
	if err != nil {
		return fmt.Errorf("watch cluster configuration %s/%s: %w", c.configNamespace, c.configName, err)
	}
	c.configSynced.Store(&synced)
	return nil
}

// HasSynced says whether every informer has its first list.
func (c *Checker) HasSynced() bool {
	configSynced := c.configSynced.Load()
	if configSynced == nil || !(*configSynced)() {
		return false
	}
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// waitReady waits for HasSynced, at most readyTimeout.
func (c *Checker) waitReady(ctx context.Context) error {
	if c.HasSynced() {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, readyTimeout, true, func(context.Context) (bool, error) {
		return c.HasSynced(), nil
	})
	if err != nil {
		return apierrors.NewServiceUnavailable("the launcher pod checks have not read the cluster's state yet; try again")
	}
	return nil
}

// CheckInstance checks the launcher pod of an instance being created (internal type, as
// virt-api stores it). It returns nil when the pod would be admitted.
func (c *Checker) CheckInstance(ctx context.Context, vmi *kubevirt.VirtualMachineInstance) (*Refusal, error) {
	out := &v1.VirtualMachineInstance{}
	if err := v1.Convert_kubevirt_VirtualMachineInstance_To_v1_VirtualMachineInstance(vmi, out, nil); err != nil {
		return nil, fmt.Errorf("convert instance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	return c.check(ctx, out)
}

// CheckVirtualMachine checks the launcher pod of the instance a start of vm would create:
// the VM's name and namespace, the template's labels and spec, as virt-controller makes it.
func (c *Checker) CheckVirtualMachine(ctx context.Context, vm *kubevirt.VirtualMachine) (*Refusal, error) {
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace, UID: vm.UID}}
	tmpl := vm.Spec.Template
	if expand := c.expand.Load(); expand != nil && tmpl != nil && (vm.Spec.Instancetype != nil || vm.Spec.Preference != nil) {
		expanded, err := (*expand)(ctx, vm)
		if err != nil {
			return &Refusal{Invalid: true, Field: []string{"spec"}, Message: err.Error()}, nil
		}
		tmpl = expanded
	}
	if tmpl != nil {
		vmi.Labels = tmpl.ObjectMeta.Labels
		vmi.Annotations = tmpl.ObjectMeta.Annotations
		if err := v1.Convert_kubevirt_VirtualMachineInstanceSpec_To_v1_VirtualMachineInstanceSpec(&tmpl.Spec, &vmi.Spec, nil); err != nil {
			return nil, fmt.Errorf("convert the template of %s/%s: %w", vm.Namespace, vm.Name, err)
		}
	}
	return c.check(ctx, vmi)
}

// check builds the pod and applies, in kube-apiserver's order, what would refuse it: pod
// validation (after LimitRanger's defaults), LimitRanger, PodSecurity, ResourceQuota. The
// first that refuses is the answer, as in kube-apiserver.
func (c *Checker) check(ctx context.Context, vmi *v1.VirtualMachineInstance) (*Refusal, error) {
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	pod, err := launcherpod.Build(vmi, filesystemModes(vmi), c.config.Get())
	if err != nil {
		return &Refusal{Invalid: true, Field: []string{"spec"}, Message: "the launcher pod cannot be built: " + err.Error()}, nil
	}
	if r := checkBuiltPod(vmi, pod); r != nil {
		return r, nil
	}

	limitRanges, err := c.limitRanges.LimitRanges(vmi.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list LimitRanges of %s: %w", vmi.Namespace, err)
	}
	limitRanges = sortedLimitRanges(limitRanges)
	defaults := applyLimitRangeDefaults(pod, limitRanges)
	if msgs := requestsWithinLimits(pod, defaults); len(msgs) > 0 {
		return &Refusal{Invalid: true, Field: []string{"spec", "domain", "resources"},
			Message: "launcher pod: " + joinMessages(msgs)}, nil
	}
	if msgs := checkLimitRanges(pod, limitRanges); len(msgs) > 0 {
		return &Refusal{Message: "launcher pod: " + joinMessages(msgs)}, nil
	}

	nsLabels, err := c.namespaceLabels(ctx, vmi.Namespace)
	if err != nil {
		return nil, err
	}
	if msg := c.podSecurity.Check(pod, nsLabels); msg != "" {
		return &Refusal{Message: msg}, nil
	}

	quotas, err := c.quotas.ResourceQuotas(vmi.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list ResourceQuotas of %s: %w", vmi.Namespace, err)
	}
	if msg := checkQuotas(pod, quotas); msg != "" {
		return &Refusal{Message: "launcher pod: " + msg}, nil
	}
	return nil, nil
}

// namespaceLabels reads the namespace from the cache, or from kube-apiserver when the cache
// does not have it yet (a namespace just created).
func (c *Checker) namespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	ns, err := c.namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		ns, err = c.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil // namespace lifecycle admission refuses the request anyway
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read namespace %s: %w", name, err)
	}
	return ns.Labels, nil
}

// filesystemModes takes every claim as a Filesystem claim. virt-api does not read claims
// (that would be a new right), and none of the checks depends on the mode: a claim is a
// persistentVolumeClaim volume either way (allowed at every Pod Security level), mounted or
// mapped as a device, with no resources of its own.
func filesystemModes(vmi *v1.VirtualMachineInstance) launcherpod.VolumeModes {
	modes := launcherpod.VolumeModes{}
	for _, name := range launcherpod.ClaimNames(vmi) {
		modes[name] = corev1.PersistentVolumeFilesystem
	}
	return modes
}

// checkBuiltPod is the pod validation of what the instance's own validation cannot see,
// because virt-controller derives it: the hostname, from the instance's name unless
// spec.hostname is set (cut to 63 characters), must be a DNS label.
func checkBuiltPod(vmi *v1.VirtualMachineInstance, pod *corev1.Pod) *Refusal {
	if errs := validation.IsDNS1123Label(pod.Spec.Hostname); len(errs) > 0 {
		from := []string{"metadata", "name"}
		if vmi.Spec.Hostname != "" {
			from = []string{"spec", "hostname"}
		}
		return &Refusal{Invalid: true, Field: from, Value: pod.Spec.Hostname,
			Message: "the launcher pod's hostname must be a DNS label (set spec.hostname): " + strings.Join(errs, "; ")}
	}
	return nil
}

// CheckStart is CheckVirtualMachine answering with the error a start action returns: the
// same 403 (or 422) an update that makes the VM run gets from the admission plugin.
func (c *Checker) CheckStart(ctx context.Context, vm *kubevirt.VirtualMachine) error {
	refusal, err := c.CheckVirtualMachine(ctx, vm)
	if err != nil || refusal == nil {
		return err
	}
	return refusal.Error(vmResource, vmKind, vm.Name, templateRoot)
}
