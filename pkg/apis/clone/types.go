package clone

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClone asks for a VirtualMachine, or a snapshot of one, to be cloned into a
// new VirtualMachine.
type VirtualMachineClone struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec   VirtualMachineCloneSpec
	Status VirtualMachineCloneStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineCloneList is a list of VirtualMachineClones.
type VirtualMachineCloneList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []VirtualMachineClone
}

// VirtualMachineCloneSpec says what to clone, into what, and what to change on the way.
type VirtualMachineCloneSpec struct {
	// Source is a kubevirt.io VirtualMachine or a snapshot.kubevirt.io VirtualMachineSnapshot.
	Source *corev1.TypedLocalObjectReference
	// Target is the new VirtualMachine; nil lets the controller pick a name.
	Target            *corev1.TypedLocalObjectReference
	LabelFilters      []string
	AnnotationFilters []string
	Template          CloneTemplateFilters
	// NewMacAddresses maps an interface name to the MAC the clone's interface gets.
	NewMacAddresses map[string]string
	NewSMBiosSerial *string
	// Patches are JSON patches applied to the target VirtualMachine.
	Patches []string
}

// CloneTemplateFilters filter the labels and annotations of the VM template's metadata.
type CloneTemplateFilters struct {
	LabelFilters      []string
	AnnotationFilters []string
}

// VirtualMachineClonePhase is where a clone is in its life.
type VirtualMachineClonePhase string

// The phases of a clone.
const (
	PhaseUnset         VirtualMachineClonePhase = ""
	SnapshotInProgress VirtualMachineClonePhase = "SnapshotInProgress"
	CreatingTargetVM   VirtualMachineClonePhase = "CreatingTargetVM"
	RestoreInProgress  VirtualMachineClonePhase = "RestoreInProgress"
	Succeeded          VirtualMachineClonePhase = "Succeeded"
	Failed             VirtualMachineClonePhase = "Failed"
	Unknown            VirtualMachineClonePhase = "Unknown"
)

// VirtualMachineCloneStatus is what the clone controller observed.
type VirtualMachineCloneStatus struct {
	Phase        VirtualMachineClonePhase
	Conditions   []snapshot.Condition
	SnapshotName *string
	RestoreName  *string
	TargetName   *string
	CreationTime *metav1.Time
}
