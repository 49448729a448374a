package virtctl

import (
	"errors"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// inferOptions are KubeVirt's flags that make a VM infer its instance type and preference from
// a volume (spec.instancetype.inferFromVolume, spec.preference.inferFromVolume), which virt-api
// resolves from the labels of the volume's claim, or of its DataVolume's source, when the VM is
// written.
//
// As in KubeVirt's v1.6, inference is on by default: a VM that names no instance type (nor
// --memory) and no preference infers them from its boot volume under the Ignore policy, so a
// volume without labels leaves a VM of the default memory. Asked for with a flag, a failure
// fails the command (the volume cannot be inferred from) or is refused by virt-api (the
// default Reject policy), and the instance type gives the memory.
//
// The volumes inferred from are KubeVirt's: a PVC, and a DataVolume whose template is made
// from a DataSource (--volume-datasource, --volume-import=type:ds), a claim
// (--volume-clone-pvc, type:pvc), a VolumeSnapshot (type:snapshot) or a registry image
// (type:registry). virt-api reads no labels of a registry import (nor does KubeVirt's): such a
// VM is stored without the matchers by default, and refused when inference was asked for; the
// manifest is still the one KubeVirt's virtctl prints.
type inferOptions struct {
	instancetype, preference         bool
	instancetypeFrom, preferenceFrom string
}

func (o *inferOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.instancetype, "infer-instancetype", o.instancetype,
		"infer the instance type from the boot volume (the lowest boot order, else the first volume); given, a failure refuses the VM")
	f.StringVar(&o.instancetypeFrom, "infer-instancetype-from", "", "infer the instance type from this volume; a failure refuses the VM")
	f.BoolVar(&o.preference, "infer-preference", o.preference,
		"infer the preference from the boot volume (the lowest boot order, else the first volume); given, a failure refuses the VM")
	f.StringVar(&o.preferenceFrom, "infer-preference-from", "", "infer the preference from this volume; a failure refuses the VM")
	cmd.MarkFlagsMutuallyExclusive("memory", "instancetype", "infer-instancetype", "infer-instancetype-from")
	cmd.MarkFlagsMutuallyExclusive("preference", "infer-preference", "infer-preference-from")
}

// apply sets the matchers of vm that infer from a volume; bootOrders maps the boot orders
// given to their volumes. Inference that was not asked for and cannot be is left out silently.
func (o *inferOptions) apply(flags *pflag.FlagSet, vm *v1.VirtualMachine, bootOrders map[uint]string) error {
	if o.instancetype && !flags.Changed("instancetype") && !flags.Changed("memory") {
		explicit := flags.Changed("infer-instancetype") || flags.Changed("infer-instancetype-from")
		flag := inferFlag(flags, "infer-instancetype")
		volume, err := inferVolume(flag, o.instancetypeFrom, vm, bootOrders)
		switch {
		case err != nil && explicit:
			return err
		case err != nil:
		case explicit:
			vm.Spec.Instancetype = &v1.InstancetypeMatcher{InferFromVolume: volume}
			vm.Spec.Template.Spec.Domain.Memory = nil // the instance type's
		default:
			// Kept for when the volume names none: the Ignore policy goes on without it.
			vm.Spec.Instancetype = &v1.InstancetypeMatcher{InferFromVolume: volume, InferFromVolumeFailurePolicy: ignoreFailure()}
		}
	}
	if o.preference && !flags.Changed("preference") {
		explicit := flags.Changed("infer-preference") || flags.Changed("infer-preference-from")
		flag := inferFlag(flags, "infer-preference")
		volume, err := inferVolume(flag, o.preferenceFrom, vm, bootOrders)
		switch {
		case err != nil && explicit:
			return err
		case err != nil:
		case explicit:
			vm.Spec.Preference = &v1.PreferenceMatcher{InferFromVolume: volume}
		default:
			vm.Spec.Preference = &v1.PreferenceMatcher{InferFromVolume: volume, InferFromVolumeFailurePolicy: ignoreFailure()}
		}
	}
	return nil
}

func ignoreFailure() *v1.InferFromVolumeFailurePolicy {
	policy := v1.IgnoreInferFromVolumeFailure
	return &policy
}

// inferFlag is the flag that asked for inference, for errors: name-from when given, else name.
func inferFlag(flags *pflag.FlagSet, name string) string {
	if flags.Changed(name + "-from") {
		return name + "-from"
	}
	return name
}

// inferVolume returns the volume to infer from: from when given, else the one of the lowest
// boot order, else the first. It must be one inferFrom accepts.
func inferVolume(flag, from string, vm *v1.VirtualMachine, bootOrders map[uint]string) (string, error) {
	volumes := vm.Spec.Template.Spec.Volumes
	value := from
	if from == "" {
		value = "true"
		switch {
		case len(bootOrders) > 0:
			orders := make([]uint, 0, len(bootOrders))
			for order := range bootOrders {
				orders = append(orders, order)
			}
			from = bootOrders[slices.Min(orders)]
		case len(volumes) > 0:
			from = volumes[0].Name
		default:
			return "", flagError(flag, value, "at least one volume is needed to infer an instance type or preference")
		}
	}
	i := slices.IndexFunc(volumes, func(v v1.Volume) bool { return v.Name == from })
	if i < 0 {
		return "", flagError(flag, value, "there is no volume named %s", from)
	}
	if err := inferableVolume(vm, &volumes[i]); err != nil {
		return "", flagError(flag, value, "volume %s %v", from, err)
	}
	return from, nil
}

// inferableVolume refuses a volume KubeVirt's virtctl does not infer from: one that is neither
// a PVC nor a DataVolume, and a DataVolume whose template is made from an HTTP, S3, GCS, blank
// or upload source. A DataVolume without a template is the cluster's, and virt-api's to read.
func inferableVolume(vm *v1.VirtualMachine, volume *v1.Volume) error {
	switch {
	case volume.PersistentVolumeClaim != nil:
		return nil
	case volume.DataVolume == nil:
		return errors.New("is no PVC or DataVolume: instance types and preferences are inferred from a claim's labels, or a DataVolume's source's")
	}
	for _, t := range vm.Spec.DataVolumeTemplates {
		if t.Name != volume.DataVolume.Name {
			continue
		}
		if s := t.Spec.Source; s != nil && (s.PVC != nil || s.Snapshot != nil || s.Registry != nil) {
			return nil
		}
		if r := t.Spec.SourceRef; r != nil && r.Kind == cdiv1beta1.DataSourceKind {
			return nil
		}
		return errors.New("is a DataVolume made from nothing to infer from: its source must be a DataSource, a PVC, a snapshot or a registry image")
	}
	return nil
}
