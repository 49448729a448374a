package virtualmachinesnapshot

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	"github.com/hangarvm/hangar/pkg/registry/access"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachinesnapshots and their status.
type Storage struct {
	VirtualMachineSnapshot *REST
	Status                 *statusrest.REST
}

// REST serves virtualmachinesnapshots.
type REST struct {
	*genericregistry.Store
	authz authorizer.Authorizer
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.Creater            = &REST{}
)

// ShortNames are KubeVirt's: `kubectl get vmsnapshot`.
func (*REST) ShortNames() []string { return []string{"vmsnapshot", "vmsnapshots"} }

// NewStorage returns the storage of virtualmachinesnapshots on the given etcd-backed options;
// authz (nil standalone) checks that whoever creates a snapshot may create VolumeSnapshots.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, authz authorizer.Authorizer) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &snapshot.VirtualMachineSnapshot{} },
		NewListFunc:               func() runtime.Object { return &snapshot.VirtualMachineSnapshotList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  snapshot.Resource("virtualmachinesnapshots"),
		SingularQualifiedResource: snapshot.Resource("virtualmachinesnapshot"),

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
		VirtualMachineSnapshot: &REST{Store: store, authz: authz},
		Status:                 statusrest.New(store, statusStrategy{strategy}),
	}, nil
}

// Create refuses, with 403, a snapshot by a user who may not create VolumeSnapshots in its
// namespace: virt-controller creates them for the snapshot with its own rights.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if createValidation != nil {
			if err := createValidation(ctx, obj); err != nil {
				return err
			}
		}
		s := obj.(*snapshot.VirtualMachineSnapshot)
		return access.Check(ctx, r.authz, snapshot.Resource("virtualmachinesnapshots"), s.Name, access.Need{
			Verb: "create", Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots",
			Namespace: access.Namespace(ctx, s.Namespace), Field: field.NewPath("spec", "source"),
			Why: "a snapshot takes VolumeSnapshots of the VirtualMachine's claims",
		})
	}, options)
}

// Serving lists what virtualmachinesnapshots serve: status.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachinesnapshots", Kind: "VirtualMachineSnapshot",
		Storage: s.VirtualMachineSnapshot, Subresources: []serving.Subresource{{Name: "status", KubeVirt: s.Status}}}
}
