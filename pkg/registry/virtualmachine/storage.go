package virtualmachine

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachines and their subresources.
type Storage struct {
	VirtualMachine *REST
	Status         *statusrest.REST
}

// REST serves virtualmachines.
type REST struct {
	*genericregistry.Store
	// authorizer answers whether a user may create the state claim a VM asks for
	// (stateclaim.go); nil standalone.
	authorizer authorizer.Authorizer
	// claimExists finds a state claim made already (stateclaim.go); nil standalone.
	claimExists ClaimExists
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get vm` work.
func (*REST) ShortNames() []string { return []string{"vm", "vms"} }

// Categories puts VMs in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of virtualmachines on the given etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &kubevirt.VirtualMachine{} },
		NewListFunc:               func() runtime.Object { return &kubevirt.VirtualMachineList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  kubevirt.Resource("virtualmachines"),
		SingularQualifiedResource: kubevirt.Resource("virtualmachine"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}

	return &Storage{VirtualMachine: &REST{Store: store}, Status: statusrest.New(store, NewStatusStrategy(strategy))}, nil
}
