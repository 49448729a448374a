package virtualmachineinstancemigration

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachineinstancemigrations and their status.
type Storage struct {
	VirtualMachineInstanceMigration *REST
	Status                          *statusrest.REST
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
	_ rest.Creater            = &REST{}
)

// ShortNames lets `kubectl get vmim` work.
func (*REST) ShortNames() []string { return []string{"vmim", "vmims"} }

// Categories puts migrations in `kubectl get all`, as KubeVirt's CRD does.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of virtualmachineinstancemigrations on the given etcd-backed
// options; vmis reads the instances a migration names, for the checks at creation.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, vmis rest.Getter) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &kubevirt.VirtualMachineInstanceMigration{} },
		NewListFunc:               func() runtime.Object { return &kubevirt.VirtualMachineInstanceMigrationList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  kubevirt.Resource("virtualmachineinstancemigrations"),
		SingularQualifiedResource: kubevirt.Resource("virtualmachineinstancemigration"),

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
		VirtualMachineInstanceMigration: newREST(store, vmis),
		Status:                          statusrest.New(store, NewStatusStrategy(strategy)),
	}, nil
}

// Serving lists what virtualmachineinstancemigrations serve: status.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachineinstancemigrations", Kind: "VirtualMachineInstanceMigration",
		Storage: s.VirtualMachineInstanceMigration, Subresources: []serving.Subresource{{Name: "status", KubeVirt: s.Status}}}
}
