package virtualmachine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
)

// DataVolumes are CDI's (cdi.kubevirt.io), served by the cluster, not by virt-api. A VM that
// uses them is refused at create time (422) where the cluster does not serve CDI, so it is
// never left waiting for DataVolumes nobody would fill. As for state claims (stateclaim.go),
// virt-controller creates the DataVolumes of a VM's templates with its own rights, so virt-api
// asks the cluster's authorizer, as the requesting user, whether the user may create
// datavolumes.cdi.kubevirt.io in the VM's namespace, whenever a write adds a template; a
// DataVolume that already exists needs no right (virt-controller creates nothing then).

// DataVolumeLookup is what virt-api asks the cluster about CDI.
type DataVolumeLookup interface {
	cdi.Served
	// Exists says whether the DataVolume namespace/name exists.
	Exists(ctx context.Context, namespace, name string) (bool, error)
}

// dataVolumeUse is what a VM asks of CDI: the names of its templates and of the DataVolumes its
// volumes name, each with the path of the field that asks for it.
type dataVolumeUse struct {
	templates map[string]*field.Path
	volumes   map[string]*field.Path
}

func dataVolumesOf(vm *kubevirt.VirtualMachine) dataVolumeUse {
	use := dataVolumeUse{templates: map[string]*field.Path{}, volumes: map[string]*field.Path{}}
	if vm == nil {
		return use
	}
	for i, dvt := range vm.Spec.DataVolumeTemplates {
		if _, ok := use.templates[dvt.Name]; !ok {
			use.templates[dvt.Name] = field.NewPath("spec", "dataVolumeTemplates").Index(i)
		}
	}
	if vm.Spec.Template != nil {
		for i, v := range vm.Spec.Template.Spec.Volumes {
			if v.DataVolume == nil {
				continue
			}
			if _, ok := use.volumes[v.DataVolume.Name]; !ok {
				use.volumes[v.DataVolume.Name] = field.NewPath("spec", "template", "spec", "volumes").Index(i).Child("dataVolume", "name")
			}
		}
	}
	return use
}

// checkDataVolumes refuses a write of vm that newly uses DataVolumes (old is nil on create):
// 422 where the cluster does not serve CDI or a dataVolume volume names neither a template nor
// an existing DataVolume, 403 where a new template's DataVolume does not exist and the user may
// not create DataVolumes in the namespace.
func (r *REST) checkDataVolumes(ctx context.Context, old, vm *kubevirt.VirtualMachine) error {
	use, before := dataVolumesOf(vm), dataVolumesOf(old)
	newTemplates := sets.KeySet(use.templates).Difference(sets.KeySet(before.templates))
	newVolumes := sets.KeySet(use.volumes).Difference(sets.KeySet(before.volumes)).Difference(sets.KeySet(use.templates))
	if newTemplates.Len() == 0 && newVolumes.Len() == 0 {
		return nil
	}
	first := firstPath(use, newTemplates, newVolumes)
	var served cdi.Served // a nil interface when standalone, not a nil DataVolumeLookup
	if r.dataVolumes != nil {
		served = r.dataVolumes
	}
	if err := cdi.RequireServed(ctx, served, kubevirt.Kind("VirtualMachine"), vm.Name, first, nameAt(use, first)); err != nil {
		return err
	}
	ns := vm.Namespace
	if ns == "" {
		ns, _ = genericapirequest.NamespaceFrom(ctx)
	}
	var missing field.ErrorList
	for _, name := range sets.List(newVolumes) {
		exists, err := r.dataVolumes.Exists(ctx, ns, name)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("look up DataVolume %s/%s: %w", ns, name, err))
		}
		if !exists {
			missing = append(missing, field.NotFound(use.volumes[name], name))
		}
	}
	if len(missing) > 0 {
		return apierrors.NewInvalid(kubevirt.Kind("VirtualMachine"), vm.Name, missing)
	}
	for _, name := range sets.List(newTemplates) {
		if err := r.authorizeDataVolume(ctx, vm, ns, name, use.templates[name]); err != nil {
			return err
		}
	}
	return nil
}

// authorizeDataVolume: the user may create datavolumes in ns, or the DataVolume exists already.
func (r *REST) authorizeDataVolume(ctx context.Context, vm *kubevirt.VirtualMachine, ns, name string, path *field.Path) error {
	if r.authorizer == nil {
		return nil
	}
	user, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("no user in the request to check the DataVolume %s against", name))
	}
	decision, reason, authErr := r.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: user, Verb: "create", Namespace: ns, APIGroup: cdi.Group, APIVersion: "v1beta1",
		Resource: cdi.DataVolumeResource, Name: name, ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	exists, err := r.dataVolumes.Exists(ctx, ns, name)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("look up DataVolume %s/%s: %w", ns, name, err))
	}
	if exists {
		return nil
	}
	if authErr != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorize DataVolume %s/%s: %w", ns, name, authErr))
	}
	detail := ""
	if reason != "" {
		detail = " (" + reason + ")"
	}
	return apierrors.NewForbidden(kubevirt.Resource("virtualmachines"), vm.Name,
		field.Forbidden(path, fmt.Sprintf("the DataVolume %s is created for the VM by Hangar: user %q may not create datavolumes.%s in namespace %q%s",
			name, user.GetName(), cdi.Group, ns, detail)))
}

// firstPath is the path of the first new use, templates first, for a 422 about all of them.
func firstPath(use dataVolumeUse, templates, volumes sets.Set[string]) *field.Path {
	if templates.Len() > 0 {
		return use.templates[sets.List(templates)[0]].Child("metadata", "name")
	}
	return use.volumes[sets.List(volumes)[0]]
}

func nameAt(use dataVolumeUse, path *field.Path) string {
	for name, p := range use.templates {
		if p.Child("metadata", "name").String() == path.String() {
			return name
		}
	}
	for name, p := range use.volumes {
		if p.String() == path.String() {
			return name
		}
	}
	return ""
}
