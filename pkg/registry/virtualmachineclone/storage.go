package virtualmachineclone

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/clone"
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
}

var _ rest.ShortNamesProvider = &REST{}

// ShortNames are KubeVirt's: `kubectl get vmclone`.
func (*REST) ShortNames() []string { return []string{"vmclone", "vmclones"} }

// NewStorage returns the storage of virtualmachineclones on the given etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
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
		VirtualMachineClone: &REST{Store: store},
		Status:              statusrest.New(store, statusStrategy{strategy}),
	}, nil
}

// Serving lists what virtualmachineclones serve: status.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachineclones", Kind: "VirtualMachineClone",
		Storage: s.VirtualMachineClone, Subresources: []serving.Subresource{{Name: "status", KubeVirt: s.Status}}}
}
