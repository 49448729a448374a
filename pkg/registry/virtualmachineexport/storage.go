package virtualmachineexport

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/export"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/access"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachineexports and their status.
type Storage struct {
	VirtualMachineExport *REST
	Status               *statusrest.REST
}

// REST serves virtualmachineexports.
type REST struct {
	*genericregistry.Store
	// authz (nil standalone) checks the requesting user's own rights.
	authz authorizer.Authorizer
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.Creater            = &REST{}
)

// ShortNames are KubeVirt's: `kubectl get vmexport`.
func (*REST) ShortNames() []string { return []string{"vmexport", "vmexports"} }

// NewStorage returns the storage of virtualmachineexports on the given etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, authz authorizer.Authorizer) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &export.VirtualMachineExport{} },
		NewListFunc:               func() runtime.Object { return &export.VirtualMachineExportList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  export.Resource("virtualmachineexports"),
		SingularQualifiedResource: export.Resource("virtualmachineexport"),

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
		VirtualMachineExport: &REST{Store: store, authz: authz},
		Status:               statusrest.New(store, statusStrategy{strategy}),
	}, nil
}

// Create checks the requesting user's own rights: virt-controller runs the export server, a
// pod that mounts the claims, with its own rights, so an export is refused (403) unless the
// user may read what it serves: the claim (or the VM and its claims) and the token's Secret.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if createValidation != nil {
			if err := createValidation(ctx, obj); err != nil {
				return err
			}
		}
		e := obj.(*export.VirtualMachineExport)
		return access.Check(ctx, r.authz, export.Resource("virtualmachineexports"), e.Name, Needs(e, access.Namespace(ctx, e.Namespace))...)
	}, options)
}

// Needs are the rights a user must have in ns to create the export e.
func Needs(e *export.VirtualMachineExport, ns string) []access.Need {
	source := field.NewPath("spec", "source")
	var needs []access.Need
	if e.Spec.Source.Kind == "VirtualMachine" {
		needs = append(needs,
			access.Need{Verb: "get", Group: kubevirt.GroupName, Version: "v1", Resource: "virtualmachines", Namespace: ns, Name: e.Spec.Source.Name,
				Field: source, Why: "an export serves the VirtualMachine's disks"},
			access.Need{Verb: "get", Version: "v1", Resource: "persistentvolumeclaims", Namespace: ns,
				Field: source, Why: "an export serves the contents of the VirtualMachine's claims"})
	} else {
		needs = append(needs, access.Need{Verb: "get", Version: "v1", Resource: "persistentvolumeclaims", Namespace: ns, Name: e.Spec.Source.Name,
			Field: source, Why: "an export serves the claim's contents"})
	}
	if ref := e.Spec.TokenSecretRef; ref != nil {
		needs = append(needs, access.Need{Verb: "get", Version: "v1", Resource: "secrets", Namespace: ns, Name: *ref,
			Field: field.NewPath("spec", "tokenSecretRef"), Why: "the export server checks downloads against the Secret's token"})
	}
	return needs
}

// Serving lists what virtualmachineexports serve: status.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachineexports", Kind: "VirtualMachineExport",
		Storage: s.VirtualMachineExport, Subresources: []serving.Subresource{{Name: "status", KubeVirt: s.Status}}}
}
