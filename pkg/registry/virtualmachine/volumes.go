package virtualmachine

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation"
	"github.com/hangarvm/hangar/pkg/registry/action"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstance"
)

// addvolume and removevolume on VMs are KubeVirt's virtctl --persist (docs/hotplug.md): the
// volume joins (or leaves) the VM's template, so the instances it starts have it as an
// ordinary disk of their launcher pods, and while the VM's instance runs it is hotplugged into
// it (or taken out, unless the instance started with it) as the instance's own actions would.
// The template changes first, in an update through admission; a refusal of the instance's
// part leaves it changed, for the next start.

// AddVolume serves virtualmachines/addvolume.
func (a *Actions) AddVolume(ctx context.Context, name string, body action.Body) error {
	opts := v1.AddVolumeOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	volume, disk, err := a.instanceVolumes.Prepare(ctx, kubevirt.Kind("VirtualMachine"), name, &opts)
	if err != nil {
		return err
	}
	err = a.updateTemplate(ctx, name, opts.DryRun, func(spec *kubevirt.VirtualMachineInstanceSpec) error {
		for _, v := range spec.Volumes {
			if v.Name == volume.Name {
				return invalidVM(name, field.Duplicate(field.NewPath("name"), volume.Name))
			}
		}
		for _, d := range spec.Domain.Devices.Disks {
			if d.Name == volume.Name {
				return invalidVM(name, field.Duplicate(field.NewPath("name"), volume.Name))
			}
		}
		spec.Volumes = append(spec.Volumes, *volume)
		spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, *disk)
		return nil
	})
	if err != nil {
		return err
	}
	vmi, err := a.instance(ctx, name)
	if err != nil || vmi == nil || vmi.Status.Phase != kubevirt.Running || hasVolume(vmi, volume.Name) {
		return err
	}
	return a.instanceVolumes.Add(ctx, name, body)
}

// RemoveVolume serves virtualmachines/removevolume: only a hotplugged volume may go.
func (a *Actions) RemoveVolume(ctx context.Context, name string, body action.Body) error {
	opts := v1.RemoveVolumeOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	if opts.Name == "" {
		return invalidVM(name, field.Required(field.NewPath("name"), "the volume to remove"))
	}
	err := a.updateTemplate(ctx, name, opts.DryRun, func(spec *kubevirt.VirtualMachineInstanceSpec) error {
		for i := range spec.Volumes {
			if v := &spec.Volumes[i]; v.Name == opts.Name {
				if !validation.Hotplugged(v) {
					return invalidVM(name, field.Invalid(field.NewPath("name"), opts.Name, "only a hotplugged volume can be removed"))
				}
				spec.Volumes = append(spec.Volumes[:i], spec.Volumes[i+1:]...)
				for j, d := range spec.Domain.Devices.Disks {
					if d.Name == opts.Name {
						spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks[:j], spec.Domain.Devices.Disks[j+1:]...)
						break
					}
				}
				return nil
			}
		}
		return invalidVM(name, field.NotFound(field.NewPath("name"), opts.Name))
	})
	if err != nil {
		return err
	}
	// An instance that started with the volume keeps it until it restarts.
	vmi, err := a.instance(ctx, name)
	if err != nil || vmi == nil || vmi.Status.Phase != kubevirt.Running || !virtualmachineinstance.LiveHotplugged(vmi, opts.Name) {
		return err
	}
	return a.instanceVolumes.Remove(ctx, name, body)
}

// updateTemplate changes the VM's template by change, decided on the freshest VM inside the
// store's compare-and-swap, through admission as the update of the VM it is.
func (a *Actions) updateTemplate(ctx context.Context, name string, dryRun []string, change func(*kubevirt.VirtualMachineInstanceSpec) error) error {
	options := &metav1.UpdateOptions{}
	if action.IsDryRun(dryRun) {
		options.DryRun = []string{metav1.DryRunAll}
	}
	updated, validate := a.admission.Update(ctx, named(vmTarget, name), options, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		vm := old.(*kubevirt.VirtualMachine).DeepCopy()
		if vm.Spec.Template == nil {
			return nil, invalidVM(name, field.Required(field.NewPath("spec", "template"), "a VM without a template has no volumes"))
		}
		if err := change(&vm.Spec.Template.Spec); err != nil {
			return nil, err
		}
		return vm, nil
	})
	_, _, err := a.vms.Update(ctx, name, updated, rest.ValidateAllObjectFunc, validate, false, options)
	return err
}

func hasVolume(vmi *kubevirt.VirtualMachineInstance, name string) bool {
	for _, v := range vmi.Spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

func invalidVM(name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(kubevirt.Kind("VirtualMachine"), name, errs)
}
