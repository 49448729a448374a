package virtualmachineclone

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/clone"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	"github.com/hangarvm/hangar/pkg/registry/access"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachineclones and their status.
type Storage struct {
	VirtualMachineClone *REST
	Status              *statusrest.REST
}

// REST serves virtualmachineclones.
type REST struct {
	*genericregistry.Store
	// authz (nil standalone) checks the requesting user's own rights.
	authz authorizer.Authorizer
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.Creater            = &REST{}
)

// ShortNames are KubeVirt's: `kubectl get vmclone`.
func (*REST) ShortNames() []string { return []string{"vmclone", "vmclones"} }

// NewStorage returns the storage of virtualmachineclones on the given etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, authz authorizer.Authorizer) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &clone.VirtualMachineClone{} },
		NewListFunc:               func() runtime.Object { return &clone.VirtualMachineCloneList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  clone.Resource("virtualmachineclones"),
		SingularQualifiedResource: clone.Resource("virtualmachineclone"),

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
		VirtualMachineClone: &REST{Store: store, authz: authz},
		Status:              statusrest.New(store, statusStrategy{strategy}),
	}, nil
}

// Create checks the requesting user's own rights: virt-controller takes the snapshot of a
// VirtualMachine source and restores it into a new VirtualMachine with its own rights, so a
// clone is refused (403) unless the user could do each step themselves: read the source,
// snapshot it (VirtualMachineSnapshot and, as a snapshot's own check asks, VolumeSnapshots
// of its claims) and restore it to a new VM (claims from the VolumeSnapshots, and the VM).
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if createValidation != nil {
			if err := createValidation(ctx, obj); err != nil {
				return err
			}
		}
		c := obj.(*clone.VirtualMachineClone)
		return access.Check(ctx, r.authz, clone.Resource("virtualmachineclones"), c.Name, Needs(c, access.Namespace(ctx, c.Namespace))...)
	}, options)
}

// Needs are the rights a user must have in ns to create the clone c.
func Needs(c *clone.VirtualMachineClone, ns string) []access.Need {
	source, target := field.NewPath("spec", "source"), field.NewPath("spec", "target")
	needs := []access.Need{{Verb: "create", Group: kubevirt.GroupName, Version: "v1", Resource: "virtualmachines", Namespace: ns,
		Field: target, Why: "a clone creates the target VirtualMachine"}}
	if c.Spec.Source != nil && c.Spec.Source.Kind == "VirtualMachineSnapshot" {
		needs = append(needs, access.Need{Verb: "get", Group: snapshot.GroupName, Version: "v1beta1", Resource: "virtualmachinesnapshots", Namespace: ns,
			Field: source, Why: "a clone copies the source snapshot's VirtualMachine"})
	} else {
		needs = append(needs,
			access.Need{Verb: "get", Group: kubevirt.GroupName, Version: "v1", Resource: "virtualmachines", Namespace: ns,
				Field: source, Why: "a clone copies the source VirtualMachine"},
			access.Need{Verb: "create", Group: snapshot.GroupName, Version: "v1beta1", Resource: "virtualmachinesnapshots", Namespace: ns,
				Field: source, Why: "a clone of a VirtualMachine snapshots it"},
			access.Need{Verb: "create", Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots", Namespace: ns,
				Field: source, Why: "the clone's snapshot takes VolumeSnapshots of the VirtualMachine's claims"})
	}
	return append(needs, access.Need{Verb: "create", Version: "v1", Resource: "persistentvolumeclaims", Namespace: ns,
		Field: target, Why: "a clone creates the target's claims from VolumeSnapshots"})
}

// Serving lists what virtualmachineclones serve: status.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachineclones", Kind: "VirtualMachineClone",
		Storage: s.VirtualMachineClone, Subresources: []serving.Subresource{{Name: "status", KubeVirt: s.Status}}}
}
