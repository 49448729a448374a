package virtualmachineinstancetype

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
	VirtualMachineInstancetype        *REST
	VirtualMachineClusterInstancetype *ClusterREST
}

// REST serves virtualmachineinstancetypes.
type REST struct {
	*genericregistry.Store
}

// ClusterREST serves virtualmachineclusterinstancetypes.
type ClusterREST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
	_ rest.ShortNamesProvider = &ClusterREST{}
)

// ShortNames are KubeVirt's: `kubectl get vmf`.
func (*REST) ShortNames() []string {
	return []string{"vminstancetype", "vminstancetypes", "vmf", "vmfs"}
}

// Categories puts namespaced instance types in `kubectl get all`, as KubeVirt does.
func (*REST) Categories() []string { return []string{"all"} }

// ShortNames are KubeVirt's: `kubectl get vmcf`.
func (*ClusterREST) ShortNames() []string {
	return []string{"vmclusterinstancetype", "vmclusterinstancetypes", "vmcf", "vmcfs"}
}

// NewStorage returns the storage of both kinds on the given etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	namespacedStore, err := newStore(optsGetter, NewStrategy(scheme, true), "virtualmachineinstancetype",
		func() runtime.Object { return &instancetype.VirtualMachineInstancetype{} },
		func() runtime.Object { return &instancetype.VirtualMachineInstancetypeList{} })
	if err != nil {
		return nil, err
	}
	clusterStore, err := newStore(optsGetter, NewStrategy(scheme, false), "virtualmachineclusterinstancetype",
		func() runtime.Object { return &instancetype.VirtualMachineClusterInstancetype{} },
		func() runtime.Object { return &instancetype.VirtualMachineClusterInstancetypeList{} })
	if err != nil {
		return nil, err
	}
	return &Storage{VirtualMachineInstancetype: &REST{namespacedStore}, VirtualMachineClusterInstancetype: &ClusterREST{clusterStore}}, nil
}

func newStore(optsGetter generic.RESTOptionsGetter, strategy itStrategy, singular string,
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
		{Name: "virtualmachineinstancetypes", Kind: "VirtualMachineInstancetype", Storage: s.VirtualMachineInstancetype},
		{Name: "virtualmachineclusterinstancetypes", Kind: "VirtualMachineClusterInstancetype", Storage: s.VirtualMachineClusterInstancetype},
	}
}
