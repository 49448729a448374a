package virtualmachineclone

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/hangarvm/hangar/pkg/registry/cdi"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachinesnapshot"
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
	// sources reads what the clone's source is a VM of (nil: nothing read).
	sources *Sources
}

// Sources reads a clone's source: a VirtualMachine, or the VM a snapshot keeps.
type Sources struct {
	VMs         rest.Getter
	Snapshotted virtualmachinesnapshot.Snapshotted
}

// spec is the VM spec the clone copies; nil when its source does not exist (the clone waits).
func (s *Sources) spec(ctx context.Context, c *clone.VirtualMachineClone) (*kubevirt.VirtualMachineSpec, error) {
	if c.Spec.Source == nil {
		return nil, nil
	}
	if c.Spec.Source.Kind == "VirtualMachineSnapshot" {
		return s.Snapshotted.Spec(ctx, c.Spec.Source.Name)
	}
	obj, err := s.VMs.Get(ctx, c.Spec.Source.Name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &obj.(*kubevirt.VirtualMachine).Spec, nil
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.Creater            = &REST{}
)

// ShortNames are KubeVirt's: `kubectl get vmclone`.
func (*REST) ShortNames() []string { return []string{"vmclone", "vmclones"} }

// NewStorage returns the storage of virtualmachineclones on the given etcd-backed options;
// sources (nil: none) reads clones' sources for the DataVolume right.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, authz authorizer.Authorizer, sources *Sources) (*Storage, error) {
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
		VirtualMachineClone: &REST{Store: store, authz: authz, sources: sources},
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
		ns := access.Namespace(ctx, c.Namespace)
		makesDataVolumes := false
		if r.sources != nil {
			spec, err := r.sources.spec(ctx, c)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("read the source of VirtualMachineClone %s/%s: %w", ns, c.Name, err))
			}
			makesDataVolumes = cdi.MakesDataVolumes(spec)
		}
		return access.Check(ctx, r.authz, clone.Resource("virtualmachineclones"), c.Name, Needs(c, ns, makesDataVolumes)...)
	}, options)
}

// Needs are the rights a user must have in ns to create the clone c; makesDataVolumes when
// the VM it copies has DataVolume templates, which the new VM makes again.
func Needs(c *clone.VirtualMachineClone, ns string, makesDataVolumes bool) []access.Need {
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
	needs = append(needs, access.Need{Verb: "create", Version: "v1", Resource: "persistentvolumeclaims", Namespace: ns,
		Field: target, Why: "a clone creates the target's claims from VolumeSnapshots"})
	if makesDataVolumes {
		needs = append(needs, cdi.CreateNeed(ns, source, "the new VirtualMachine makes the source's DataVolume templates again as DataVolumes"))
	}
	return needs
}

// Serving lists what virtualmachineclones serve: status.
func (s *Storage) Serving() serving.Resource {
	return serving.Resource{Name: "virtualmachineclones", Kind: "VirtualMachineClone",
		Storage: s.VirtualMachineClone, Subresources: []serving.Subresource{{Name: "status", KubeVirt: s.Status}}}
}
