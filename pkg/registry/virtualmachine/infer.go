package virtualmachine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	cdiv1beta1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/instancetype/infer"
	"github.com/hangarvm/hangar/pkg/registry/access"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstance"
)

// A VM may take its instance type and preference from the labels of what a volume is made of
// (spec.instancetype.inferFromVolume, spec.preference.inferFromVolume; pkg/instancetype/infer):
// a claim, or a DataVolume and the DataSource, claim or VolumeSnapshot it is made from.
// virt-api resolves them when the VM is written, on create and on an update that sets
// inferFromVolume again (a manifest applied again, too: infer.ForgetMerged), so the stored VM
// names its instance type and preference as any other and expand-spec, the controller and the
// launcher pod checks never see inferFromVolume. expand-vm-spec resolves them the same way for
// the VM it previews.
//
// virt-api reads those objects with its own client, which may read every namespace's, but
// only after asking the cluster's authorizer (a SubjectAccessReview, as the requesting user)
// whether the user may get that object: what a VM is stored with, and whether it is refused,
// must not tell its writer an object's labels, or that it exists, when the writer could not
// read the object. A user who may not is refused with 403 whatever the failure policy.

// ClaimGetter reads a PersistentVolumeClaim of kube-apiserver: the one hotplug uses.
type ClaimGetter = virtualmachineinstance.ClaimGetter

// VolumeSourceGetter reads what DataVolumes are made of, from kube-apiserver: CDI's DataVolumes
// and DataSources, and VolumeSnapshots. A kind the cluster does not serve is not found.
type VolumeSourceGetter interface {
	DataVolume(ctx context.Context, namespace, name string) (*cdiv1beta1.DataVolume, error)
	DataSource(ctx context.Context, namespace, name string) (*cdiv1beta1.DataSource, error)
	// SnapshotLabels returns the labels of a VolumeSnapshot, all inference reads of it.
	SnapshotLabels(ctx context.Context, namespace, name string) (map[string]string, error)
}

// What inference reads, as the authorizer names it; DataVolumes are cdi.DataVolumeResource.
var (
	claimsResource      = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	dataVolumesResource = schema.GroupVersionResource{Group: cdi.Group, Version: "v1beta1", Resource: cdi.DataVolumeResource}
	dataSourcesResource = schema.GroupVersionResource{Group: cdi.Group, Version: "v1beta1", Resource: DataSourceResource}
	snapshotsResource   = schema.GroupVersionResource{Group: SnapshotGroup, Version: "v1", Resource: VolumeSnapshotResource}
)

// DataSourceResource is CDI's DataSources; VolumeSnapshotResource the CSI snapshotter's
// VolumeSnapshots, of SnapshotGroup.
const (
	DataSourceResource     = "datasources"
	SnapshotGroup          = "snapshot.storage.k8s.io"
	VolumeSnapshotResource = "volumesnapshots"
)

// sourcesAsUser reads the objects behind volumes for the user of the request in ctx:
// authorized, then read with virt-api's client.
type sourcesAsUser struct {
	authorizer authorizer.Authorizer // nil: no check (standalone, every client an admin)
	claims     ClaimGetter           // nil: no claims to read (standalone)
	sources    VolumeSourceGetter    // nil: no DataVolumes and the like to read (standalone)
	vm         string
}

var _ infer.Reader = sourcesAsUser{}

// ClaimLabels returns the labels of a claim the requesting user may get.
func (s sourcesAsUser) ClaimLabels(ctx context.Context, path *field.Path, namespace, name string) (map[string]string, error) {
	if s.claims == nil {
		return nil, notInCluster(path, name, "claims")
	}
	if err := s.authorize(ctx, path, claimsResource, "claim", namespace, name); err != nil {
		return nil, err
	}
	claim, err := s.claims(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return claim.Labels, nil
}

// SnapshotLabels returns the labels of a VolumeSnapshot the requesting user may get.
func (s sourcesAsUser) SnapshotLabels(ctx context.Context, path *field.Path, namespace, name string) (map[string]string, error) {
	if s.sources == nil {
		return nil, notInCluster(path, name, "VolumeSnapshots")
	}
	if err := s.authorize(ctx, path, snapshotsResource, "VolumeSnapshot", namespace, name); err != nil {
		return nil, err
	}
	return s.sources.SnapshotLabels(ctx, namespace, name)
}

// DataVolume returns a DataVolume the requesting user may get.
func (s sourcesAsUser) DataVolume(ctx context.Context, path *field.Path, namespace, name string) (*cdiv1beta1.DataVolume, error) {
	if s.sources == nil {
		return nil, notInCluster(path, name, "DataVolumes")
	}
	if err := s.authorize(ctx, path, dataVolumesResource, "DataVolume", namespace, name); err != nil {
		return nil, err
	}
	return s.sources.DataVolume(ctx, namespace, name)
}

// DataSource returns a DataSource the requesting user may get.
func (s sourcesAsUser) DataSource(ctx context.Context, path *field.Path, namespace, name string) (*cdiv1beta1.DataSource, error) {
	if s.sources == nil {
		return nil, notInCluster(path, name, "DataSources")
	}
	if err := s.authorize(ctx, path, dataSourcesResource, "DataSource", namespace, name); err != nil {
		return nil, err
	}
	return s.sources.DataSource(ctx, namespace, name)
}

// authorize asks whether the requesting user may get resource namespace/name (a kind, for
// messages): nil if so, else a 403 on path naming the user and the right.
func (s sourcesAsUser) authorize(ctx context.Context, path *field.Path, resource schema.GroupVersionResource, kind, namespace, name string) error {
	return access.Check(ctx, s.authorizer, kubevirt.Resource("virtualmachines"), s.vm, access.Need{
		Verb: "get", Group: resource.Group, Version: resource.Version, Resource: resource.Resource, Namespace: namespace, Name: name,
		Field: path, Why: fmt.Sprintf("inferring from the %s %s needs to read it", kind, name),
	})
}

// notInCluster is the VM's error where virt-api runs without a cluster to read what (plural) from.
func notInCluster(path *field.Path, name, what string) error {
	return field.Invalid(path, name, what+" are kept in the cluster, which this virt-api cannot read: name the instance type or preference")
}

// inferMatchers resolves vm's matchers that infer from a volume, in place, reading what the
// volumes are made of as the requesting user; the error is the VM's 422, a 403, or an internal
// error.
func (r *REST) inferMatchers(ctx context.Context, vm *kubevirt.VirtualMachine) error {
	return r.expander.inferMatchers(ctx, vm, sourcesAsUser{authorizer: r.authorizer, claims: r.claims, sources: r.volumeSources, vm: vm.Name})
}

// InferMatchers resolves vm's matchers that infer from a volume with reader, as a write
// through the registry does before the strategy sees the VM (for tests of what virt-api
// accepts).
func (s vmStrategy) InferMatchers(ctx context.Context, vm *kubevirt.VirtualMachine, reader infer.Reader) error {
	return s.expander.inferMatchers(ctx, vm, reader)
}

func (e *expander) inferMatchers(ctx context.Context, vm *kubevirt.VirtualMachine, reader infer.Reader) error {
	if !infer.Wanted(vm) {
		return nil
	}
	if vm.Namespace == "" {
		vm.Namespace, _ = genericapirequest.NamespaceFrom(ctx)
	}
	result, err := infer.VirtualMachine(ctx, vm, reader)
	if err != nil {
		return err
	}
	if result.Dropped && vm.Spec.Instancetype == nil && vm.Spec.Preference == nil && vm.Spec.Template != nil {
		// The Ignore policy left a VM of its own template: defaulted as one written so is
		// (v1.SetDefaults_VirtualMachine), as its instance will be.
		tmpl, err := e.defaulted(vm.Spec.Template)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("default the template of %s/%s: %w", vm.Namespace, vm.Name, err))
		}
		vm.Spec.Template = tmpl
	}
	return nil
}

// inferringUpdate resolves inferFromVolume in the object an update makes. The object is the
// update's own (a copy of the request's, or the patched one), never the stored one.
type inferringUpdate struct {
	rest.UpdatedObjectInfo
	vms *REST
}

func (u inferringUpdate) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	obj, err := u.UpdatedObjectInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, err
	}
	if vm, ok := obj.(*kubevirt.VirtualMachine); ok {
		if oldVM, ok := old.(*kubevirt.VirtualMachine); ok {
			infer.ForgetMerged(vm, oldVM)
		}
		if err := u.vms.inferMatchers(ctx, vm); err != nil {
			return nil, err
		}
	}
	return obj, nil
}
