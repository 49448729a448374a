package virtualmachineinstancereplicaset

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachineinstancereplicasets and their subresources.
type Storage struct {
	VirtualMachineInstanceReplicaSet *REST
	Status                           *statusrest.REST
	Scale                            *ScaleREST
}

// REST serves virtualmachineinstancereplicasets.
type REST struct {
	*genericregistry.Store
	// cdi says whether the cluster serves DataVolumes (datavolumes.go); nil standalone.
	cdi cdi.Served
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get vmirs` work.
func (*REST) ShortNames() []string { return []string{"vmirs", "vmirss"} }

// Categories puts VMI replica sets in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of virtualmachineinstancereplicasets on the given etcd-backed
// options; served says whether the cluster serves CDI (nil without a cluster).
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, served cdi.Served) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &kubevirt.VirtualMachineInstanceReplicaSet{} },
		NewListFunc:               func() runtime.Object { return &kubevirt.VirtualMachineInstanceReplicaSetList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  kubevirt.Resource("virtualmachineinstancereplicasets"),
		SingularQualifiedResource: kubevirt.Resource("virtualmachineinstancereplicaset"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{
		RESTOptions: optsGetter,
		AttrFunc:    GetAttrs,
	}); err != nil {
		return nil, err
	}

	return &Storage{VirtualMachineInstanceReplicaSet: &REST{Store: store, cdi: served}, Status: statusrest.New(store, NewStatusStrategy(strategy)),
		Scale: &ScaleREST{store: store},
	}, nil
}

// Serving lists what virtualmachineinstancereplicasets serve: status and scale.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachineinstancereplicasets", Kind: "VirtualMachineInstanceReplicaSet",
		Storage: s.VirtualMachineInstanceReplicaSet, Subresources: []serving.Subresource{
			{Name: "status", KubeVirt: s.Status},
			{Name: "scale", KubeVirt: s.Scale},
		}}
}
