package virtualmachineinstancemigration

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// A migration is accepted only for an instance that exists, runs, is live-migratable and has
// no other migration in flight: KubeVirt's create admitter, done here in the registry where
// the instance can be read without a webhook.
//
// Two creates for one instance race. Within one virt-api they are serialized by a lock per
// instance, so the second sees the first and is refused. virt-api runs two replicas, so after
// storing a migration the create lists the instance's migrations again (a consistent read) and
// withdraws its own if an older one is in flight. A pair of creates on two replicas within
// the same instant may still both stand (each list may miss the other, and creation times
// have one-second resolution); the controller settles that as KubeVirt's does: it takes one
// migration per instance at a time, recorded in the instance's migrationState.migrationUid
// by a compare-and-swap update.

// REST serves virtualmachineinstancemigrations.
type REST struct {
	*genericregistry.Store
	vmis  rest.Getter
	locks keyedLocks
}

func newREST(store *genericregistry.Store, vmis rest.Getter) *REST {
	return &REST{Store: store, vmis: vmis, locks: keyedLocks{held: map[string]*keyedLock{}}}
}

// Create stores a migration once the instance it names may be migrated.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	m, ok := obj.(*kubevirt.VirtualMachineInstanceMigration)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a VirtualMachineInstanceMigration: %T", obj))
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	defer r.locks.lock(namespace + "/" + m.Spec.VMIName)()

	// The checks run after the strategy's own validation (a migration without vmiName is a
	// 422 on spec.vmiName before the instance is looked up) and before admission's.
	validate := func(ctx context.Context, obj runtime.Object) error {
		if err := r.admit(ctx, obj.(*kubevirt.VirtualMachineInstanceMigration)); err != nil {
			return err
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}
	out, err := r.Store.Create(ctx, obj, validate, options)
	if err != nil || len(options.DryRun) > 0 {
		return out, err
	}
	created := out.(*kubevirt.VirtualMachineInstanceMigration)
	older, err := r.olderInFlight(ctx, created)
	if err != nil || older == nil {
		return out, err
	}
	// Another virt-api accepted a migration of the same instance first: withdraw ours.
	zero := int64(0)
	if _, _, err := r.Store.Delete(ctx, created.Name, rest.ValidateAllObjectFunc,
		&metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &created.UID}}); err != nil && !apierrors.IsNotFound(err) {
		klog.ErrorS(err, "Cannot withdraw a migration that raced another", "migration", klog.KObj(created))
	}
	return nil, inFlight(created, older)
}

// admit checks the instance a migration names.
func (r *REST) admit(ctx context.Context, m *kubevirt.VirtualMachineInstanceMigration) error {
	path := field.NewPath("spec", "vmiName")
	obj, err := r.vmis.Get(ctx, m.Spec.VMIName, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return invalid(m, field.Invalid(path, m.Spec.VMIName,
			fmt.Sprintf("the VMI %q does not exist", m.Namespace+"/"+m.Spec.VMIName)))
	}
	if err != nil {
		return err
	}
	vmi := obj.(*kubevirt.VirtualMachineInstance)
	if vmi.IsFinal() {
		return invalid(m, field.Invalid(path, m.Spec.VMIName, "Cannot migrate VMI in finalized state."))
	}
	if vmi.Status.Phase != kubevirt.Running {
		return invalid(m, field.Invalid(path, m.Spec.VMIName,
			fmt.Sprintf("Cannot migrate VMI in phase %q: only a Running VMI can be migrated", vmi.Status.Phase)))
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirt.VirtualMachineInstanceIsMigratable && c.Status == corev1.ConditionFalse {
			return invalid(m, field.Invalid(path, m.Spec.VMIName,
				fmt.Sprintf("Cannot migrate VMI, Reason: %s, Message: %s", c.Reason, c.Message)))
		}
	}
	active, err := r.inFlight(ctx, m.Spec.VMIName)
	if err != nil {
		return err
	}
	if len(active) > 0 {
		return inFlight(m, &active[0])
	}
	return nil
}

// inFlight lists the instance's migrations that have not ended, with a consistent read.
func (r *REST) inFlight(ctx context.Context, vmiName string) ([]kubevirt.VirtualMachineInstanceMigration, error) {
	selector := labels.SelectorFromSet(labels.Set{v1.MigrationSelectorLabel: vmiName})
	obj, err := r.Store.List(ctx, &metainternalversion.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var out []kubevirt.VirtualMachineInstanceMigration
	for _, m := range obj.(*kubevirt.VirtualMachineInstanceMigrationList).Items {
		if !m.IsFinal() && m.DeletionTimestamp == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

// olderInFlight returns a migration of the same instance, in flight, created before m.
func (r *REST) olderInFlight(ctx context.Context, m *kubevirt.VirtualMachineInstanceMigration) (*kubevirt.VirtualMachineInstanceMigration, error) {
	active, err := r.inFlight(ctx, m.Spec.VMIName)
	if err != nil {
		return nil, err
	}
	for i := range active {
		o := &active[i]
		if o.UID != m.UID && createdBefore(o, m) {
			return o, nil
		}
	}
	return nil, nil
}

// createdBefore orders migrations by creation time, then by name: a total order every
// virt-api agrees on.
func createdBefore(a, b *kubevirt.VirtualMachineInstanceMigration) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func invalid(m *kubevirt.VirtualMachineInstanceMigration, errs ...*field.Error) error {
	return apierrors.NewInvalid(kubevirt.Kind("VirtualMachineInstanceMigration"), m.Name, errs)
}

// inFlight is KubeVirt's refusal of a second migration, on spec.vmiName.
func inFlight(m, active *kubevirt.VirtualMachineInstanceMigration) error {
	return invalid(m, field.Forbidden(field.NewPath("spec", "vmiName"), fmt.Sprintf(
		"in-flight migration detected. Active migration job (%s) is currently already in progress for VMI %s.",
		active.UID, active.Spec.VMIName)))
}

// keyedLocks is a mutex per key, dropped when nobody holds or waits for it.
type keyedLocks struct {
	mu   sync.Mutex
	held map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

// lock takes the key's mutex and returns its release.
func (k *keyedLocks) lock(key string) func() {
	k.mu.Lock()
	l := k.held[key]
	if l == nil {
		l = &keyedLock{}
		k.held[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.held, key)
		}
		k.mu.Unlock()
	}
}
