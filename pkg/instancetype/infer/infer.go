// Package infer resolves the matchers of a VirtualMachine that take their instance type or
// preference from a volume (spec.instancetype.inferFromVolume, spec.preference.inferFromVolume):
// the object behind the volume carries labels naming them, and the matcher is rewritten to that
// name and kind, as KubeVirt's virt-api does when a VM is written. The stored VM names its
// instance type like any other; inferFromVolume is not kept.
//
// The objects are a claim, or a DataVolume and what it is made from (volume.go). Reading them
// is the caller's: virt-api reads them with its own client after asking whether the requesting
// user may (pkg/registry/virtualmachine/infer.go).
package infer

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cdi "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// The kinds a label-less kind stands for, written as KubeVirt's defaulting writes them.
const (
	clusterInstancetypeKind = "virtualmachineclusterinstancetype"
	clusterPreferenceKind   = "virtualmachineclusterpreference"
)

// Reader reads the objects behind a VM's volumes, one method per kind of object: the labels of
// the kinds inference reads only labels of, the object of the kinds it may follow further. path
// is the matcher's inferFromVolume field, for errors that name it. A *field.Error is the VM's
// fault (a 422); an API status (403 for a user who may not read it, 404 for a missing object)
// is kept as it is; anything else is an internal error.
type Reader interface {
	// ClaimLabels returns the labels of the PersistentVolumeClaim namespace/name.
	ClaimLabels(ctx context.Context, path *field.Path, namespace, name string) (map[string]string, error)
	// SnapshotLabels returns the labels of the VolumeSnapshot (snapshot.storage.k8s.io)
	// namespace/name.
	SnapshotLabels(ctx context.Context, path *field.Path, namespace, name string) (map[string]string, error)
	// DataVolume returns the DataVolume (cdi.kubevirt.io) namespace/name.
	DataVolume(ctx context.Context, path *field.Path, namespace, name string) (*cdi.DataVolume, error)
	// DataSource returns the DataSource (cdi.kubevirt.io) namespace/name.
	DataSource(ctx context.Context, path *field.Path, namespace, name string) (*cdi.DataSource, error)
}

// Result says what inference did besides rewriting matchers.
type Result struct {
	// Dropped is true when the Ignore policy removed a matcher whose volume named nothing.
	Dropped bool
}

// Wanted says whether vm has a matcher to infer.
func Wanted(vm *kubevirt.VirtualMachine) bool {
	return (vm.Spec.Instancetype != nil && vm.Spec.Instancetype.InferFromVolume != "") ||
		(vm.Spec.Preference != nil && vm.Spec.Preference.InferFromVolume != "")
}

// VirtualMachine rewrites vm's matchers that name a volume to the name and kind the volume's
// labels give (the cluster-wide kind when no kind label), dropping inferFromVolume and its
// policy. When inference fails:
//   - a volume the template does not have, or a matcher that also sets name or kind: a 422;
//   - a volume of a kind that carries no labels, an object that does not exist, or objects
//     without the name label all the way (volume.go): a 422 naming the field under the Reject
//     policy (the default); under Ignore the matcher is removed and the VM goes on without it;
//   - a read the reader refuses (403) or cannot do: that error, whatever the policy.
//
// An instance type inferred under Ignore removes the template's domain.memory, as KubeVirt's
// does: a VM written to infer "if it can" carries its own memory for when it cannot (virtctl
// create vm writes such VMs), and the instance type gives the memory when it can.
func VirtualMachine(ctx context.Context, vm *kubevirt.VirtualMachine, reader Reader) (Result, error) {
	if errs := validateMatchers(vm); len(errs) > 0 {
		return Result{}, apierrors.NewInvalid(kubevirt.Kind("VirtualMachine"), vm.Name, errs)
	}
	in := &inference{vm: vm, reader: reader, reads: map[string]read{}}
	var result Result
	var allErrs field.ErrorList
	if m := vm.Spec.Instancetype; m != nil && m.InferFromVolume != "" {
		w := wanted{path: field.NewPath("spec", "instancetype"), volume: m.InferFromVolume, policy: m.InferFromVolumeFailurePolicy,
			nameLabel: instancetype.DefaultInstancetypeLabel, kindLabel: instancetype.DefaultInstancetypeKindLabel, defaultKind: clusterInstancetypeKind}
		name, kind, drop, err := in.resolve(ctx, w)
		switch {
		case err != nil:
			if list, ok := err.(fieldErrors); ok {
				allErrs = append(allErrs, list...)
			} else {
				return Result{}, err
			}
		case drop:
			vm.Spec.Instancetype, result.Dropped = nil, true
		default:
			vm.Spec.Instancetype = &kubevirt.InstancetypeMatcher{Name: name, Kind: kind}
			if w.ignore() && vm.Spec.Template != nil {
				vm.Spec.Template.Spec.Domain.Memory = nil
			}
		}
	}
	if m := vm.Spec.Preference; m != nil && m.InferFromVolume != "" {
		w := wanted{path: field.NewPath("spec", "preference"), volume: m.InferFromVolume, policy: m.InferFromVolumeFailurePolicy,
			nameLabel: instancetype.DefaultPreferenceLabel, kindLabel: instancetype.DefaultPreferenceKindLabel, defaultKind: clusterPreferenceKind}
		name, kind, drop, err := in.resolve(ctx, w)
		switch {
		case err != nil:
			if list, ok := err.(fieldErrors); ok {
				allErrs = append(allErrs, list...)
			} else {
				return Result{}, err
			}
		case drop:
			vm.Spec.Preference, result.Dropped = nil, true
		default:
			vm.Spec.Preference = &kubevirt.PreferenceMatcher{Name: name, Kind: kind}
		}
	}
	if len(allErrs) > 0 {
		return Result{}, apierrors.NewInvalid(kubevirt.Kind("VirtualMachine"), vm.Name, allErrs)
	}
	return result, nil
}

// ForgetMerged clears, in an update's matchers that infer from a volume, the name, kind and
// revision equal to the stored VM's: they were merged from the stored VM, not written with
// inferFromVolume. A manifest applied again (kubectl apply --server-side) still has
// inferFromVolume, and its merge with the stored VM the name and kind its first write
// resolved; KubeVirt refuses that merge as a matcher naming both, Hangar infers again. A name
// or kind the update changes is the writer's, and still refused with inferFromVolume.
func ForgetMerged(vm, old *kubevirt.VirtualMachine) {
	if old == nil {
		return
	}
	if m, o := vm.Spec.Instancetype, old.Spec.Instancetype; m != nil && o != nil && m.InferFromVolume != "" &&
		m.Name == o.Name && m.Kind == o.Kind && m.RevisionName == o.RevisionName {
		m.Name, m.Kind, m.RevisionName = "", "", ""
	}
	if m, o := vm.Spec.Preference, old.Spec.Preference; m != nil && o != nil && m.InferFromVolume != "" &&
		m.Name == o.Name && m.Kind == o.Kind && m.RevisionName == o.RevisionName {
		m.Name, m.Kind, m.RevisionName = "", "", ""
	}
}

// validateMatchers refuses what KubeVirt refuses before inferring: a matcher that names a volume
// and an instance type (or kind) at once, and a policy it does not know.
func validateMatchers(vm *kubevirt.VirtualMachine) field.ErrorList {
	var allErrs field.ErrorList
	check := func(path *field.Path, name, kind, volume string, policy *kubevirt.InferFromVolumeFailurePolicy) {
		if volume != "" && name != "" {
			allErrs = append(allErrs, field.Forbidden(path.Child("name"), "may not be set with inferFromVolume, which gives it"))
		}
		if volume != "" && kind != "" {
			allErrs = append(allErrs, field.Forbidden(path.Child("kind"), "may not be set with inferFromVolume, which gives it"))
		}
		if policy != nil && *policy != kubevirt.RejectInferFromVolumeFailure && *policy != kubevirt.IgnoreInferFromVolumeFailure {
			allErrs = append(allErrs, field.NotSupported(path.Child("inferFromVolumeFailurePolicy"), *policy,
				[]string{string(kubevirt.RejectInferFromVolumeFailure), string(kubevirt.IgnoreInferFromVolumeFailure)}))
		}
	}
	if m := vm.Spec.Instancetype; m != nil {
		check(field.NewPath("spec", "instancetype"), m.Name, m.Kind, m.InferFromVolume, m.InferFromVolumeFailurePolicy)
	}
	if m := vm.Spec.Preference; m != nil {
		check(field.NewPath("spec", "preference"), m.Name, m.Kind, m.InferFromVolume, m.InferFromVolumeFailurePolicy)
	}
	return allErrs
}

// wanted is one matcher to infer.
type wanted struct {
	path                 *field.Path // spec.instancetype or spec.preference
	volume               string
	policy               *kubevirt.InferFromVolumeFailurePolicy
	nameLabel, kindLabel string
	defaultKind          string
}

func (w wanted) ignore() bool {
	return w.policy != nil && *w.policy == kubevirt.IgnoreInferFromVolumeFailure
}

// fieldErrors are the VM's errors of one matcher.
type fieldErrors field.ErrorList

func (e fieldErrors) Error() string { return field.ErrorList(e).ToAggregate().Error() }

// nothingNamed is a volume that names no instance type or preference: the Ignore policy's to
// forgive.
type nothingNamed string

func (e nothingNamed) Error() string { return string(e) }

type inference struct {
	vm     *kubevirt.VirtualMachine
	reader Reader
	// reads are the objects read so far, by kind and namespace/name: both matchers usually
	// infer from one volume, which is authorized and read once.
	reads map[string]read
}

// resolve returns the name and kind w's volume gives, or drop under Ignore, or the error:
// fieldErrors for the VM's, the reader's otherwise.
func (in *inference) resolve(ctx context.Context, w wanted) (name, kind string, drop bool, err error) {
	volumePath := w.path.Child("inferFromVolume")
	var volume *kubevirt.Volume
	if in.vm.Spec.Template != nil {
		for i := range in.vm.Spec.Template.Spec.Volumes {
			if v := &in.vm.Spec.Template.Spec.Volumes[i]; v.Name == w.volume {
				volume = v
				break
			}
		}
	}
	if volume == nil {
		// KubeVirt refuses this under either policy: the VM names a volume it does not have.
		return "", "", false, fieldErrors{field.Invalid(volumePath, w.volume, "no volume of this name in spec.template.spec.volumes")}
	}
	name, kind, err = in.fromVolume(ctx, volumePath, w, volume)
	var nothing nothingNamed
	var fieldErr *field.Error
	switch {
	case err == nil:
		if kind == "" {
			kind = w.defaultKind
		}
		return name, kind, false, nil
	case errors.As(err, &nothing) && w.ignore():
		return "", "", true, nil
	case errors.As(err, &nothing):
		return "", "", false, fieldErrors{field.Invalid(volumePath, w.volume, string(nothing)+
			" (with inferFromVolumeFailurePolicy: Ignore the VM goes on without it)")}
	case errors.As(err, &fieldErr):
		return "", "", false, fieldErrors{fieldErr}
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		return "", "", false, err
	}
	return "", "", false, apierrors.NewInternalError(fmt.Errorf("infer %s from volume %s: %w", w.path, w.volume, err))
}
