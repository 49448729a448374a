package virtualmachinesnapshotcontent

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachinesnapshotcontents and their status.
type Storage struct {
	VirtualMachineSnapshotContent *REST
	Status                        *statusrest.REST
}

// REST serves virtualmachinesnapshotcontents.
type REST struct {
	*genericregistry.Store
}

var _ rest.ShortNamesProvider = &REST{}

// ShortNames are KubeVirt's: `kubectl get vmsnapshotcontent`.
func (*REST) ShortNames() []string { return []string{"vmsnapshotcontent", "vmsnapshotcontents"} }

// NewStorage returns the storage of virtualmachinesnapshotcontents on the given etcd-backed
// options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &snapshot.VirtualMachineSnapshotContent{} },
		NewListFunc:               func() runtime.Object { return &snapshot.VirtualMachineSnapshotContentList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  snapshot.Resource("virtualmachinesnapshotcontents"),
		SingularQualifiedResource: snapshot.Resource("virtualmachinesnapshotcontent"),

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
		VirtualMachineSnapshotContent: &REST{store},
		Status:                        statusrest.New(store, statusStrategy{strategy}),
	}, nil
}

// Serving lists what virtualmachinesnapshotcontents serve: status.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachinesnapshotcontents", Kind: "VirtualMachineSnapshotContent",
		Storage: s.VirtualMachineSnapshotContent, Subresources: []serving.Subresource{{Name: "status", KubeVirt: s.Status}}}
}
