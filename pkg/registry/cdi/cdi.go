// Package cdi is what virt-api's registries ask of CDI (cdi.kubevirt.io), which the cluster
// serves or not: Hangar does not import disks itself. Whatever names a DataVolume (a VM, an
// instance, a replica set's template) is refused with a 422 where CDI is not served, so that
// nothing waits for a DataVolume nobody would fill.
package cdi

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/access"
)

// Group is CDI's API group; DataVolumeResource its DataVolumes.
const (
	Group              = "cdi.kubevirt.io"
	DataVolumeResource = "datavolumes"
)

// Served says whether the cluster serves cdi.kubevirt.io/v1beta1 datavolumes.
type Served interface {
	Served(ctx context.Context) (bool, error)
}

// RequireServed refuses a write of the object kind/name whose field path names the
// DataVolume dataVolume, where the cluster does not serve CDI. A nil served is virt-api
// without a cluster, where nothing is.
func RequireServed(ctx context.Context, served Served, kind schema.GroupKind, name string, path *field.Path, dataVolume string) error {
	if served == nil {
		return apierrors.NewInvalid(kind, name, field.ErrorList{field.Invalid(path, dataVolume,
			"DataVolumes need CDI ("+Group+"), and this virt-api runs without a cluster")})
	}
	ok, err := served.Served(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("find out whether the cluster serves %s: %w", Group, err))
	}
	if !ok {
		return apierrors.NewInvalid(kind, name, field.ErrorList{field.Invalid(path, dataVolume,
			"DataVolumes need CDI (the Containerized Data Importer, "+Group+"), which this cluster does not serve: install CDI, or use persistentVolumeClaim volumes")})
	}
	return nil
}

// FirstVolume is the first of volumes (at path) that names a DataVolume: that DataVolume's
// name and the path of the field naming it; "" when none does.
func FirstVolume(volumes []kubevirt.Volume, path *field.Path) (string, *field.Path) {
	for i, v := range volumes {
		if v.DataVolume != nil {
			return v.DataVolume.Name, path.Index(i).Child("dataVolume", "name")
		}
	}
	return "", nil
}

// RequireServedFor refuses volumes (at path, of the object kind/name) that name a DataVolume
// where CDI is not served; volumes without DataVolumes need nothing.
func RequireServedFor(ctx context.Context, served Served, kind schema.GroupKind, name string, volumes []kubevirt.Volume, path *field.Path) error {
	dataVolume, at := FirstVolume(volumes, path)
	if at == nil {
		return nil
	}
	return RequireServed(ctx, served, kind, name, at, dataVolume)
}

// MakesDataVolumes says whether a VM of spec has virt-controller make DataVolumes: whether one
// of its volumes names one of its DataVolume templates.
func MakesDataVolumes(spec *kubevirt.VirtualMachineSpec) bool {
	if spec == nil || spec.Template == nil {
		return false
	}
	for _, v := range spec.Template.Spec.Volumes {
		if v.DataVolume == nil {
			continue
		}
		for _, t := range spec.DataVolumeTemplates {
			if t.Name == v.DataVolume.Name {
				return true
			}
		}
	}
	return false
}

// CreateNeed is the right to create DataVolumes in ns, for what makes a VM whose DataVolume
// templates virt-controller fills with its own rights (path: the field that asks; why: how).
func CreateNeed(ns string, path *field.Path, why string) access.Need {
	return access.Need{Verb: "create", Group: Group, Version: "v1beta1", Resource: DataVolumeResource, Namespace: ns, Field: path, Why: why}
}
