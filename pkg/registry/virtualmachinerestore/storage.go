package virtualmachinerestore

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	"github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/registry/access"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachinesnapshot"
)

// Storage holds the REST endpoints of virtualmachinerestores and their status.
type Storage struct {
	VirtualMachineRestore *REST
	Status                *statusrest.REST
}

// REST serves virtualmachinerestores.
type REST struct {
	*genericregistry.Store
	deps Dependencies
}

// Dependencies are what a restore is checked against at creation.
type Dependencies struct {
	// Authorizer (nil standalone) checks the requesting user's own rights.
	Authorizer authorizer.Authorizer
	// Snapshots reads the snapshot a restore names; VMs its target.
	Snapshots, VMs rest.Getter
	// Snapshotted reads the VM spec the snapshot keeps (nil: none read).
	Snapshotted *virtualmachinesnapshot.Snapshotted
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.Creater            = &REST{}
)

// ShortNames are KubeVirt's: `kubectl get vmrestore`.
func (*REST) ShortNames() []string { return []string{"vmrestore", "vmrestores"} }

// NewStorage returns the storage of virtualmachinerestores on the given etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, deps Dependencies) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &snapshot.VirtualMachineRestore{} },
		NewListFunc:               func() runtime.Object { return &snapshot.VirtualMachineRestoreList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  snapshot.Resource("virtualmachinerestores"),
		SingularQualifiedResource: snapshot.Resource("virtualmachinerestore"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return &Storage{
		VirtualMachineRestore: &REST{Store: store, deps: deps},
		Status:                statusrest.New(store, statusStrategy{strategy}),
	}, nil
}

// Create checks what KubeVirt's webhook checks (the snapshot exists and was taken of a
// VirtualMachine), then the user's own rights: virt-controller creates claims from the
// snapshot's VolumeSnapshots and writes or creates the target VM with its own rights, so the
// user must be allowed to create persistentvolumeclaims in the namespace, and to update the
// target VM (or create one, for a new name), and, when the snapshotted VM has DataVolume
// templates (which the restored VM makes again), to create datavolumes.
//
// RestoreCreatesTargetAnnotation records which of the two the user was checked for, so that
// the controller does only that, whatever happens to the target meanwhile.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	restore := obj.(*snapshot.VirtualMachineRestore)
	ns := access.Namespace(ctx, restore.Namespace)
	targetExists, err := r.exists(ctx, r.deps.VMs, restore.Spec.Target.Name)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("look up the target VirtualMachine %s/%s: %w", ns, restore.Spec.Target.Name, err))
	}
	delete(restore.Annotations, v1beta1.RestoreCreatesTargetAnnotation)
	if r.deps.VMs != nil {
		metav1.SetMetaDataAnnotation(&restore.ObjectMeta, v1beta1.RestoreCreatesTargetAnnotation, strconv.FormatBool(!targetExists))
	}
	return r.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if createValidation != nil {
			if err := createValidation(ctx, obj); err != nil {
				return err
			}
		}
		if err := r.checkSnapshot(ctx, restore); err != nil {
			return err
		}
		needs := []access.Need{{
			Verb: "create", Version: "v1", Resource: "persistentvolumeclaims", Namespace: ns,
			Field: field.NewPath("spec", "virtualMachineSnapshotName"),
			Why:   "a restore creates claims from the snapshot's VolumeSnapshots",
		}}
		vmNeed := access.Need{Verb: "update", Group: kubevirt.GroupName, Version: "v1", Resource: "virtualmachines", Namespace: ns,
			Field: field.NewPath("spec", "target"), Why: "a restore rewrites the target VirtualMachine's spec"}
		if !targetExists {
			vmNeed.Verb, vmNeed.Why = "create", "a restore to a new name creates the VirtualMachine"
		}
		needs = append(needs, vmNeed)
		if r.deps.Snapshotted != nil {
			spec, err := r.deps.Snapshotted.Spec(ctx, restore.Spec.VirtualMachineSnapshotName)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("read what VirtualMachineSnapshot %s/%s keeps: %w", ns, restore.Spec.VirtualMachineSnapshotName, err))
			}
			if cdi.MakesDataVolumes(spec) {
				needs = append(needs, cdi.CreateNeed(ns, field.NewPath("spec", "virtualMachineSnapshotName"),
					"the restored VirtualMachine's DataVolume templates are made again as DataVolumes"))
			}
		}
		return access.Check(ctx, r.deps.Authorizer, snapshot.Resource("virtualmachinerestores"), restore.Name, needs...)
	}, options)
}

// checkSnapshot refuses a restore of a snapshot that does not exist, with a 422 naming the
// field, as KubeVirt's webhook does.
func (r *REST) checkSnapshot(ctx context.Context, restore *snapshot.VirtualMachineRestore) error {
	if r.deps.Snapshots == nil {
		return nil
	}
	name := restore.Spec.VirtualMachineSnapshotName
	obj, err := r.deps.Snapshots.Get(ctx, name, &metav1.GetOptions{})
	path := field.NewPath("spec", "virtualMachineSnapshotName")
	switch {
	case apierrors.IsNotFound(err):
		return apierrors.NewInvalid(snapshot.Kind("VirtualMachineRestore"), restore.Name,
			field.ErrorList{field.NotFound(path, name)})
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("read VirtualMachineSnapshot %s: %w", name, err))
	}
	s := obj.(*snapshot.VirtualMachineSnapshot)
	if s.Status != nil && s.Status.Phase == snapshot.Failed {
		return apierrors.NewInvalid(snapshot.Kind("VirtualMachineRestore"), restore.Name,
			field.ErrorList{field.Invalid(path, name, "the snapshot failed and cannot be restored")})
	}
	return nil
}

func (r *REST) exists(ctx context.Context, getter rest.Getter, name string) (bool, error) {
	if getter == nil {
		return true, nil
	}
	_, err := getter.Get(ctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Serving lists what virtualmachinerestores serve: status.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachinerestores", Kind: "VirtualMachineRestore",
		Storage: s.VirtualMachineRestore, Subresources: []serving.Subresource{{Name: "status", KubeVirt: s.Status}}}
}
