package virtualmachinepreference

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	"github.com/hangarvm/hangar/pkg/registry/serving"
)

// Storage holds the REST endpoints of both kinds.
type Storage struct {
	VirtualMachinePreference        *REST
	VirtualMachineClusterPreference *ClusterREST
}

// REST serves virtualmachinepreferences.
type REST struct {
	*genericregistry.Store
}

// ClusterREST serves virtualmachineclusterpreferences.
type ClusterREST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
	_ rest.ShortNamesProvider = &ClusterREST{}
)

// ShortNames are KubeVirt's: `kubectl get vmp`.
func (*REST) ShortNames() []string {
	return []string{"vmpref", "vmprefs", "vmp", "vmps"}
}

// Categories puts namespaced preferences in `kubectl get all`, as KubeVirt does.
func (*REST) Categories() []string { return []string{"all"} }

// ShortNames are KubeVirt's: `kubectl get vmcp`.
func (*ClusterREST) ShortNames() []string {
	return []string{"vmcp", "vmcps"}
}

// NewStorage returns the storage of both kinds on the given etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	namespacedStore, err := newStore(optsGetter, NewStrategy(scheme, true), "virtualmachinepreference",
		func() runtime.Object { return &instancetype.VirtualMachinePreference{} },
		func() runtime.Object { return &instancetype.VirtualMachinePreferenceList{} })
	if err != nil {
		return nil, err
	}
	clusterStore, err := newStore(optsGetter, NewStrategy(scheme, false), "virtualmachineclusterpreference",
		func() runtime.Object { return &instancetype.VirtualMachineClusterPreference{} },
		func() runtime.Object { return &instancetype.VirtualMachineClusterPreferenceList{} })
	if err != nil {
		return nil, err
	}
	return &Storage{VirtualMachinePreference: &REST{namespacedStore}, VirtualMachineClusterPreference: &ClusterREST{clusterStore}}, nil
}

func newStore(optsGetter generic.RESTOptionsGetter, strategy prefStrategy, singular string,
	newFunc, newListFunc func() runtime.Object) (*genericregistry.Store, error) {
	store := &genericregistry.Store{
		NewFunc:                   newFunc,
		NewListFunc:               newListFunc,
		PredicateFunc:             Match,
		DefaultQualifiedResource:  instancetype.Resource(singular + "s"),
		SingularQualifiedResource: instancetype.Resource(singular),

		CreateStrategy: strategy,
		UpdateStrategy: strategy,
		DeleteStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return store, nil
}

// Serving lists both kinds; neither has subresources.
func (s *Storage) Serving() []serving.Resource {
	return []serving.Resource{
		{Name: "virtualmachinepreferences", Kind: "VirtualMachinePreference", Storage: s.VirtualMachinePreference},
		{Name: "virtualmachineclusterpreferences", Kind: "VirtualMachineClusterPreference", Storage: s.VirtualMachineClusterPreference},
	}
}
