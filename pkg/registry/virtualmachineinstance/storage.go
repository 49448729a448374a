package virtualmachineinstance

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachineinstances and their subresources.
type Storage struct {
	VirtualMachineInstance *REST
	Status                 *statusrest.REST
}

// REST serves virtualmachineinstances.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get vmi` work.
func (*REST) ShortNames() []string { return []string{"vmi", "vmis"} }

// Categories puts VMIs in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of virtualmachineinstances on the given etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &kubevirt.VirtualMachineInstance{} },
		NewListFunc:               func() runtime.Object { return &kubevirt.VirtualMachineInstanceList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  kubevirt.Resource("virtualmachineinstances"),
		SingularQualifiedResource: kubevirt.Resource("virtualmachineinstance"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{
		RESTOptions: optsGetter,
		AttrFunc:    GetAttrs,
		TriggerFunc: map[string]storage.IndexerFunc{NodeNameField: NodeNameTriggerFunc},
	}); err != nil {
		return nil, err
	}

	return &Storage{VirtualMachineInstance: &REST{store}, Status: statusrest.New(store, NewStatusStrategy(strategy))}, nil
}
