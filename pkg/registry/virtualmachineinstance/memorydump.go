package virtualmachineinstance

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// The VM's memorydump and removememorydump actions (pkg/registry/virtualmachine) add and take
// out the running instance's memory dump volume here, as hotplug actions do, through
// admission; the dump's file, which the action names, goes into the volume's status in the
// same write, so each dump has its own file and no earlier dump's status counts for it.

// SetMemoryDump gives the running instance name the memory dump volume of claim, or renews it
// for a new dump (the last one ended), with the dump's file in its status.
func (v *Volumes) SetMemoryDump(ctx context.Context, name, claim, file string, dryRun []string) error {
	status := kubevirt.VolumeStatus{Name: claim, Phase: kubevirt.VolumePending, Reason: "MemoryDumpRequested",
		Message: "a memory dump was requested", MemoryDumpVolume: &kubevirt.DomainMemoryDumpInfo{ClaimName: claim, TargetFileName: file}}
	return v.update(withVolumeStatus(ctx, status), name, dryRun, func(vmi *kubevirt.VirtualMachineInstance) error {
		if err := running(vmi); err != nil {
			return err
		}
		for _, existing := range vmi.Spec.Volumes {
			switch {
			case existing.Name == claim && existing.MemoryDump != nil:
				return nil // a new dump to the same claim: the status renews it
			case existing.Name == claim:
				return invalid(name, field.Invalid(field.NewPath("claimName"), claim, "the instance has a volume of this name"))
			case claimOf(&existing) == claim:
				return invalid(name, field.Invalid(field.NewPath("claimName"), claim,
					"the instance uses this claim as volume "+existing.Name))
			}
		}
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, kubevirt.Volume{Name: claim, VolumeSource: kubevirt.VolumeSource{
			MemoryDump: &kubevirt.MemoryDumpVolumeSource{PersistentVolumeClaimVolumeSource: kubevirt.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: true}}}})
		return nil
	})
}

// RemoveMemoryDump takes the memory dump volume of claim out of instance name, if it has it.
func (v *Volumes) RemoveMemoryDump(ctx context.Context, name, claim string, dryRun []string) error {
	return v.update(ctx, name, dryRun, func(vmi *kubevirt.VirtualMachineInstance) error {
		for i, existing := range vmi.Spec.Volumes {
			if existing.Name == claim && existing.MemoryDump != nil {
				vmi.Spec.Volumes = append(vmi.Spec.Volumes[:i], vmi.Spec.Volumes[i+1:]...)
				return nil
			}
		}
		return nil
	})
}
