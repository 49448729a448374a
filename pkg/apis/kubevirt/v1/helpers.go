package v1

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RunStrategyFromRunning is the run strategy the deprecated spec.running stands for.
func RunStrategyFromRunning(running bool) VirtualMachineRunStrategy {
	if running {
		return RunStrategyAlways
	}
	return RunStrategyHalted
}

// EffectiveRunStrategy is the run strategy a VirtualMachine spec asks for, whichever of
// runStrategy and the deprecated running it uses.
func (s *VirtualMachineSpec) EffectiveRunStrategy() VirtualMachineRunStrategy {
	switch {
	case s.RunStrategy != nil:
		return *s.RunStrategy
	case s.Running != nil:
		return RunStrategyFromRunning(*s.Running)
	}
	return RunStrategyHalted
}

// Labels of launcher pods, as KubeVirt sets them.
const (
	// AppLabel names the component a pod belongs to; launcher pods have virt-launcher.
	AppLabel = "kubevirt.io"
	// LauncherAppLabelValue is AppLabel's value on launcher pods.
	LauncherAppLabelValue = "virt-launcher"
	// MigrationJobLabel marks a migration's target launcher pod with the migration's UID
	// (KubeVirt's label).
	MigrationJobLabel = "kubevirt.io/migrationJobUID"
	// CreatedByLabel carries the UID of the instance a launcher pod runs.
	CreatedByLabel = "kubevirt.io/created-by"
)

// Condition is the instance's condition of type t, or nil.
func (s *VirtualMachineInstanceStatus) Condition(t VirtualMachineInstanceConditionType) *VirtualMachineInstanceCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// SetCondition sets a condition, keeping its transition time (and probe time) while its
// status stays. virt-controller and virt-handler both write instance conditions through it.
func (s *VirtualMachineInstanceStatus) SetCondition(cond VirtualMachineInstanceCondition, now metav1.Time) {
	if old := s.Condition(cond.Type); old != nil {
		cond.LastTransitionTime, cond.LastProbeTime = old.LastTransitionTime, old.LastProbeTime
		if old.Status != cond.Status || cond.LastTransitionTime.IsZero() {
			cond.LastTransitionTime = now
		}
		*old = cond
		return
	}
	cond.LastTransitionTime = now
	s.Conditions = append(s.Conditions, cond)
}

// RemoveCondition removes the condition of type t, if any, into a new slice (the old one may
// be shared with an informer's cache).
func (s *VirtualMachineInstanceStatus) RemoveCondition(t VirtualMachineInstanceConditionType) {
	var out []VirtualMachineInstanceCondition
	for _, c := range s.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	s.Conditions = out
}

// IsFinal says whether a migration has ended, one way or the other.
func (m *VirtualMachineInstanceMigration) IsFinal() bool {
	return m.Status.Phase == MigrationSucceeded || m.Status.Phase == MigrationFailed
}

// IsFinal says whether the instance has stopped for good: Succeeded or Failed (its claims are
// free, nothing brings it back).
func (vmi *VirtualMachineInstance) IsFinal() bool {
	return vmi.Status.Phase == Succeeded || vmi.Status.Phase == Failed
}

// IsMigratable says whether the instance's LiveMigratable condition is True (KubeVirt's test
// for eviction strategies: an instance not yet assessed is not migratable).
func (vmi *VirtualMachineInstance) IsMigratable() bool {
	c := vmi.Status.Condition(VirtualMachineInstanceIsMigratable)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsMarkedForEviction says whether the instance is to leave its node (an eviction of its
// launcher pod was turned into an evacuation).
func (vmi *VirtualMachineInstance) IsMarkedForEviction() bool {
	return vmi.Status.EvacuationNodeName != ""
}

// ClaimSource is the claim a volume attaches: a persistentVolumeClaim volume's, or the claim of
// a dataVolume volume's DataVolume, which has the DataVolume's name (CDI's rule). nil for the
// other sources.
func (s *VolumeSource) ClaimSource() *corev1.PersistentVolumeClaimVolumeSource {
	switch {
	case s.PersistentVolumeClaim != nil:
		return &s.PersistentVolumeClaim.PersistentVolumeClaimVolumeSource
	case s.DataVolume != nil:
		return &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.DataVolume.Name}
	}
	return nil
}

// Hotplugged says whether the source is a claim or DataVolume marked hotpluggable, or a
// memory dump's claim: one that may come into and leave a running guest (docs/hotplug.md).
func (s *VolumeSource) Hotplugged() bool {
	return (s.PersistentVolumeClaim != nil && s.PersistentVolumeClaim.Hotpluggable) ||
		(s.DataVolume != nil && s.DataVolume.Hotpluggable) || s.MemoryDump != nil
}

// MemoryDumpFileName is the file a memory dump of instance vmiName to claim, begun at, goes to
// in the claim's root, as KubeVirt names them.
func MemoryDumpFileName(vmiName, claim string, at time.Time) string {
	return fmt.Sprintf("%s-%s-%s.memory.dump", vmiName, claim, at.UTC().Format("20060102-150405"))
}

// Memory dump sizing, as KubeVirt's: the guest's memory, 100Mi for the ELF headers and notes,
// and the 5.5% a file system takes of a claim (CDI's default overhead), rounded up to a MiB.
const (
	memoryDumpOverhead = 100 << 20
	fileSystemOverhead = 0.055
)

// MemoryDumpClaimSize is the size of a claim that holds a memory dump of the guest of d.
func MemoryDumpClaimSize(d *DomainSpec) resource.Quantity {
	memory, _ := d.GuestMemory()
	bytes := (float64(memory.Value()) + memoryDumpOverhead) * (1 + fileSystemOverhead)
	const mib = 1 << 20
	return *resource.NewQuantity(int64(math.Ceil(bytes/mib))*mib, resource.BinarySI)
}
