package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineClone asks for a VirtualMachine, or a snapshot of one, to be cloned into a
// new VirtualMachine.
type VirtualMachineClone struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec names the source and the target and what to change on the way.
	Spec VirtualMachineCloneSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is what the clone controller observed.
	// +optional
	Status VirtualMachineCloneStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineCloneList is a list of VirtualMachineClones.
type VirtualMachineCloneList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineClones.
	Items []VirtualMachineClone `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineCloneSpec says what to clone, into what, and what to change on the way.
type VirtualMachineCloneSpec struct {
	// Source is a kubevirt.io VirtualMachine or a snapshot.kubevirt.io VirtualMachineSnapshot.
	Source *corev1.TypedLocalObjectReference `json:"source" protobuf:"bytes,1,opt,name=source"`
	// Target is the new VirtualMachine; when absent the controller picks a name and shows it
	// in status.targetName.
	// +optional
	Target *corev1.TypedLocalObjectReference `json:"target,omitempty" protobuf:"bytes,2,opt,name=target"`
	// LabelFilters select the source's labels the target keeps (wildcards and "!" negations).
	// +optional
	// +listType=atomic
	LabelFilters []string `json:"labelFilters,omitempty" protobuf:"bytes,3,rep,name=labelFilters"`
	// AnnotationFilters select the source's annotations the target keeps.
	// +optional
	// +listType=atomic
	AnnotationFilters []string `json:"annotationFilters,omitempty" protobuf:"bytes,4,rep,name=annotationFilters"`
	// Template filters the labels and annotations of the VM template's metadata.
	// +optional
	Template CloneTemplateFilters `json:"template,omitempty" protobuf:"bytes,5,opt,name=template"`
	// NewMacAddresses maps an interface name to the MAC the target's interface gets.
	// +optional
	NewMacAddresses map[string]string `json:"newMacAddresses,omitempty" protobuf:"bytes,6,rep,name=newMacAddresses"`
	// NewSMBiosSerial is the target's SMBIOS serial number.
	// +optional
	NewSMBiosSerial *string `json:"newSMBiosSerial,omitempty" protobuf:"bytes,7,opt,name=newSMBiosSerial"`
	// Patches are JSON patches applied to the target VirtualMachine.
	// +optional
	// +listType=atomic
	Patches []string `json:"patches,omitempty" protobuf:"bytes,8,rep,name=patches"`
}

// CloneTemplateFilters filter the labels and annotations of the VM template's metadata.
type CloneTemplateFilters struct {
	// LabelFilters select the template's labels the target keeps.
	// +optional
	// +listType=atomic
	LabelFilters []string `json:"labelFilters,omitempty" protobuf:"bytes,1,rep,name=labelFilters"`
	// AnnotationFilters select the template's annotations the target keeps.
	// +optional
	// +listType=atomic
	AnnotationFilters []string `json:"annotationFilters,omitempty" protobuf:"bytes,2,rep,name=annotationFilters"`
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
	// Phase is SnapshotInProgress, CreatingTargetVM, RestoreInProgress, Succeeded, Failed or
	// Unknown; empty before the controller has seen the clone.
	// +optional
	Phase VirtualMachineClonePhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=VirtualMachineClonePhase"`
	// Conditions are Ready and Progressing, of the snapshot group's type (one OpenAPI model,
	// v1beta1.Condition, for both groups).
	// +optional
	// +listType=atomic
	Conditions []snapshotv1beta1.Condition `json:"conditions,omitempty" protobuf:"bytes,2,rep,name=conditions"`
	// SnapshotName is the snapshot taken of a VirtualMachine source.
	// +optional
	SnapshotName *string `json:"snapshotName,omitempty" protobuf:"bytes,3,opt,name=snapshotName"`
	// RestoreName is the restore that makes the target.
	// +optional
	RestoreName *string `json:"restoreName,omitempty" protobuf:"bytes,4,opt,name=restoreName"`
	// TargetName is the target VirtualMachine's name, given or picked.
	// +optional
	TargetName *string `json:"targetName,omitempty" protobuf:"bytes,5,opt,name=targetName"`
	// CreationTime is when the clone succeeded.
	// +optional
	// +nullable
	CreationTime *metav1.Time `json:"creationTime,omitempty" protobuf:"bytes,6,opt,name=creationTime"`
}
