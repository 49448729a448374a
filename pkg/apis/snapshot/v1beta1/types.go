package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubevirtv1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineSnapshot asks for a snapshot of a VirtualMachine: its spec, kept in a
// VirtualMachineSnapshotContent, and a VolumeSnapshot of each of its claims.
type VirtualMachineSnapshot struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec names the VirtualMachine to snapshot.
	Spec VirtualMachineSnapshotSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is what the snapshot controller observed.
	// +optional
	Status *VirtualMachineSnapshotStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineSnapshotList is a list of VirtualMachineSnapshots.
type VirtualMachineSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineSnapshots.
	Items []VirtualMachineSnapshot `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// DeletionPolicy says what becomes of a snapshot's content when the snapshot is deleted.
type DeletionPolicy string

const (
	// VirtualMachineSnapshotContentDelete deletes the content and its VolumeSnapshots with the
	// snapshot.
	VirtualMachineSnapshotContentDelete DeletionPolicy = "Delete"
	// VirtualMachineSnapshotContentRetain keeps the content after the snapshot is deleted.
	VirtualMachineSnapshotContentRetain DeletionPolicy = "Retain"
)

// VirtualMachineSnapshotSpec names what to snapshot and how long it may take.
type VirtualMachineSnapshotSpec struct {
	// Source is the VirtualMachine to snapshot (apiGroup kubevirt.io, kind VirtualMachine).
	Source corev1.TypedLocalObjectReference `json:"source" protobuf:"bytes,1,opt,name=source"`
	// DeletionPolicy is what becomes of the content when the snapshot is deleted: Delete
	// (the default) or Retain.
	// +optional
	DeletionPolicy *DeletionPolicy `json:"deletionPolicy,omitempty" protobuf:"bytes,2,opt,name=deletionPolicy,casttype=DeletionPolicy"`
	// FailureDeadline is how long the snapshot may take before it fails; 0 waits forever.
	// Five minutes when unset.
	// +optional
	FailureDeadline *metav1.Duration `json:"failureDeadline,omitempty" protobuf:"bytes,3,opt,name=failureDeadline"`
}

// Indication tells how a snapshot was taken.
type Indication string

const (
	// VMSnapshotOnlineSnapshotIndication: the VM was running when it was snapshotted.
	VMSnapshotOnlineSnapshotIndication Indication = "Online"
	// VMSnapshotNoGuestAgentIndication: no guest agent was connected, so the guest's file
	// systems were not frozen.
	VMSnapshotNoGuestAgentIndication Indication = "NoGuestAgent"
	// VMSnapshotGuestAgentIndication: the guest agent froze the guest's file systems.
	VMSnapshotGuestAgentIndication Indication = "GuestAgent"
	// VMSnapshotQuiesceFailedIndication: freezing through the guest agent failed.
	VMSnapshotQuiesceFailedIndication Indication = "QuiesceFailed"
)

// VirtualMachineSnapshotPhase is where a snapshot is in its life.
type VirtualMachineSnapshotPhase string

const (
	PhaseUnset VirtualMachineSnapshotPhase = ""
	InProgress VirtualMachineSnapshotPhase = "InProgress"
	Succeeded  VirtualMachineSnapshotPhase = "Succeeded"
	Failed     VirtualMachineSnapshotPhase = "Failed"
	Deleting   VirtualMachineSnapshotPhase = "Deleting"
	Unknown    VirtualMachineSnapshotPhase = "Unknown"
)

// VirtualMachineSnapshotStatus is what the snapshot controller observed.
type VirtualMachineSnapshotStatus struct {
	// SourceUID is the UID of the VirtualMachine snapshotted.
	// +optional
	SourceUID *types.UID `json:"sourceUID,omitempty" protobuf:"bytes,1,opt,name=sourceUID,casttype=k8s.io/apimachinery/pkg/types.UID"`
	// VirtualMachineSnapshotContentName names the content that keeps the snapshot.
	// +optional
	VirtualMachineSnapshotContentName *string `json:"virtualMachineSnapshotContentName,omitempty" protobuf:"bytes,2,opt,name=virtualMachineSnapshotContentName"`
	// CreationTime is when the snapshot was taken.
	// +optional
	// +nullable
	CreationTime *metav1.Time `json:"creationTime,omitempty" protobuf:"bytes,3,opt,name=creationTime"`
	// Phase is InProgress, Succeeded, Failed, Deleting or Unknown.
	// +optional
	Phase VirtualMachineSnapshotPhase `json:"phase,omitempty" protobuf:"bytes,4,opt,name=phase,casttype=VirtualMachineSnapshotPhase"`
	// ReadyToUse is true once every VolumeSnapshot is ready: the snapshot can be restored.
	// +optional
	ReadyToUse *bool `json:"readyToUse,omitempty" protobuf:"varint,5,opt,name=readyToUse"`
	// Error is the last error met.
	// +optional
	Error *Error `json:"error,omitempty" protobuf:"bytes,6,opt,name=error"`
	// Conditions are Progressing, Ready and Failure.
	// +optional
	// +listType=atomic
	Conditions []Condition `json:"conditions,omitempty" protobuf:"bytes,7,rep,name=conditions"`
	// Indications tell how the snapshot was taken: Online, GuestAgent, NoGuestAgent.
	// +optional
	// +listType=set
	Indications []Indication `json:"indications,omitempty" protobuf:"bytes,8,rep,name=indications,casttype=Indication"`
	// SnapshotVolumes lists the VM's volumes included in the snapshot and those left out.
	// +optional
	SnapshotVolumes *SnapshotVolumesLists `json:"snapshotVolumes,omitempty" protobuf:"bytes,9,opt,name=snapshotVolumes"`
}

// SnapshotVolumesLists names the volumes a snapshot includes and those it leaves out.
type SnapshotVolumesLists struct {
	// IncludedVolumes are the volumes snapshotted.
	// +optional
	// +listType=set
	IncludedVolumes []string `json:"includedVolumes,omitempty" protobuf:"bytes,1,rep,name=includedVolumes"`
	// ExcludedVolumes are the volumes that cannot be snapshotted (not backed by a claim).
	// +optional
	// +listType=set
	ExcludedVolumes []string `json:"excludedVolumes,omitempty" protobuf:"bytes,2,rep,name=excludedVolumes"`
}

// Error is the last error of a snapshot, its content or one of its VolumeSnapshots.
type Error struct {
	// Time is when the error was seen.
	// +optional
	Time *metav1.Time `json:"time,omitempty" protobuf:"bytes,1,opt,name=time"`
	// Message says what went wrong.
	// +optional
	Message *string `json:"message,omitempty" protobuf:"bytes,2,opt,name=message"`
}

// ConditionType names a condition of a snapshot or restore.
type ConditionType string

const (
	// ConditionReady: the snapshot can be restored, or the restore is done.
	ConditionReady ConditionType = "Ready"
	// ConditionProgressing: the snapshot or restore is under way.
	ConditionProgressing ConditionType = "Progressing"
	// ConditionFailure: the snapshot or restore cannot go on; the message says why.
	ConditionFailure ConditionType = "Failure"
)

// Condition is one observation of a snapshot or restore.
type Condition struct {
	// Type is Ready, Progressing or Failure.
	Type ConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=ConditionType"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status" protobuf:"bytes,2,opt,name=status,casttype=k8s.io/api/core/v1.ConditionStatus"`
	// LastProbeTime is when the condition was last checked.
	// +optional
	// +nullable
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty" protobuf:"bytes,3,opt,name=lastProbeTime"`
	// LastTransitionTime is when the status last changed.
	// +optional
	// +nullable
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty" protobuf:"bytes,4,opt,name=lastTransitionTime"`
	// Reason is a one-word reason for the status.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,5,opt,name=reason"`
	// Message says more about the status.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,6,opt,name=message"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineSnapshotContent keeps what a snapshot took: the VirtualMachine as it was and
// the VolumeSnapshot of each of its claims. The snapshot controller makes it.
type VirtualMachineSnapshotContent struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is the VirtualMachine and its volumes' backups.
	Spec VirtualMachineSnapshotContentSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is what the snapshot controller observed of the VolumeSnapshots.
	// +optional
	Status *VirtualMachineSnapshotContentStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineSnapshotContentList is a list of VirtualMachineSnapshotContents.
type VirtualMachineSnapshotContentList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineSnapshotContents.
	Items []VirtualMachineSnapshotContent `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineSnapshotContentSpec is what a snapshot keeps.
type VirtualMachineSnapshotContentSpec struct {
	// VirtualMachineSnapshotName names the snapshot the content belongs to.
	// +optional
	VirtualMachineSnapshotName *string `json:"virtualMachineSnapshotName,omitempty" protobuf:"bytes,1,opt,name=virtualMachineSnapshotName"`
	// Source is the VirtualMachine as it was snapshotted.
	Source SourceSpec `json:"source" protobuf:"bytes,2,opt,name=source"`
	// VolumeBackups are the snapshots of the VM's claims.
	// +optional
	// +listType=atomic
	VolumeBackups []VolumeBackup `json:"volumeBackups,omitempty" protobuf:"bytes,3,rep,name=volumeBackups"`
}

// VirtualMachine is a VirtualMachine as a snapshot keeps it: its name, labels, annotations,
// spec and status.
// +k8s:conversion-gen=false
type VirtualMachine struct {
	// Metadata of the VirtualMachine: name, namespace, labels and annotations.
	// +optional
	// +nullable
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is the VirtualMachine's spec as it was snapshotted.
	// +optional
	Spec kubevirtv1.VirtualMachineSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// Status is the VirtualMachine's status as it was snapshotted.
	// +optional
	Status kubevirtv1.VirtualMachineStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// SourceSpec is what was snapshotted.
type SourceSpec struct {
	// VirtualMachine is the VirtualMachine snapshotted.
	// +optional
	VirtualMachine *VirtualMachine `json:"virtualMachine,omitempty" protobuf:"bytes,1,opt,name=virtualMachine"`
}

// PersistentVolumeClaim is a claim as a snapshot keeps it, so a restore can make one like it.
type PersistentVolumeClaim struct {
	// Metadata of the claim: name, namespace, labels and annotations.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is the claim's spec.
	// +optional
	Spec corev1.PersistentVolumeClaimSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

// VolumeBackup is the snapshot of one of the VM's volumes.
type VolumeBackup struct {
	// VolumeName is the volume's name in the VM's spec.
	VolumeName string `json:"volumeName" protobuf:"bytes,1,opt,name=volumeName"`
	// PersistentVolumeClaim is the claim behind the volume.
	PersistentVolumeClaim PersistentVolumeClaim `json:"persistentVolumeClaim" protobuf:"bytes,2,opt,name=persistentVolumeClaim"`
	// VolumeSnapshotName names the VolumeSnapshot of the claim.
	// +optional
	VolumeSnapshotName *string `json:"volumeSnapshotName,omitempty" protobuf:"bytes,3,opt,name=volumeSnapshotName"`
}

// VirtualMachineSnapshotContentStatus is what the snapshot controller observed of the content.
type VirtualMachineSnapshotContentStatus struct {
	// CreationTime is when the last VolumeSnapshot was taken.
	// +optional
	// +nullable
	CreationTime *metav1.Time `json:"creationTime,omitempty" protobuf:"bytes,1,opt,name=creationTime"`
	// ReadyToUse is true once every VolumeSnapshot is ready.
	// +optional
	ReadyToUse *bool `json:"readyToUse,omitempty" protobuf:"varint,2,opt,name=readyToUse"`
	// Error is the last error met.
	// +optional
	Error *Error `json:"error,omitempty" protobuf:"bytes,3,opt,name=error"`
	// VolumeSnapshotStatus is the state of each VolumeSnapshot.
	// +optional
	// +listType=atomic
	VolumeSnapshotStatus []VolumeSnapshotStatus `json:"volumeSnapshotStatus,omitempty" protobuf:"bytes,4,rep,name=volumeSnapshotStatus"`
}

// VolumeSnapshotStatus is the state of one VolumeSnapshot of a content.
type VolumeSnapshotStatus struct {
	// VolumeSnapshotName names the VolumeSnapshot.
	VolumeSnapshotName string `json:"volumeSnapshotName" protobuf:"bytes,1,opt,name=volumeSnapshotName"`
	// CreationTime is when the storage took the snapshot.
	// +optional
	// +nullable
	CreationTime *metav1.Time `json:"creationTime,omitempty" protobuf:"bytes,2,opt,name=creationTime"`
	// ReadyToUse is the VolumeSnapshot's readyToUse.
	// +optional
	ReadyToUse *bool `json:"readyToUse,omitempty" protobuf:"varint,3,opt,name=readyToUse"`
	// Error is the VolumeSnapshot's error.
	// +optional
	Error *Error `json:"error,omitempty" protobuf:"bytes,4,opt,name=error"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineRestore asks for a snapshot to be restored to a VirtualMachine: the one it
// was taken of, stopped, or a new one.
type VirtualMachineRestore struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec names the snapshot and the target VirtualMachine.
	Spec VirtualMachineRestoreSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is what the restore controller observed.
	// +optional
	Status *VirtualMachineRestoreStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineRestoreList is a list of VirtualMachineRestores.
type VirtualMachineRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineRestores.
	Items []VirtualMachineRestore `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// TargetReadinessPolicy says what a restore does while its target VM is not ready for it.
type TargetReadinessPolicy string

const (
	VirtualMachineRestoreStopTarget             TargetReadinessPolicy = "StopTarget"
	VirtualMachineRestoreWaitGracePeriodAndFail TargetReadinessPolicy = "WaitGracePeriod"
	VirtualMachineRestoreFailImmediate          TargetReadinessPolicy = "FailImmediate"
	VirtualMachineRestoreWaitEventually         TargetReadinessPolicy = "WaitEventually"
)

// VolumeRestorePolicy says how restored claims are named.
type VolumeRestorePolicy string

const (
	VolumeRestorePolicyRandomizeNames VolumeRestorePolicy = "RandomizeNames"
	VolumeRestorePolicyInPlace        VolumeRestorePolicy = "InPlace"
)

// VirtualMachineRestoreSpec names the snapshot and the VirtualMachine it is restored to.
type VirtualMachineRestoreSpec struct {
	// Target is the VirtualMachine to restore to (apiGroup kubevirt.io, kind
	// VirtualMachine): the one snapshotted, or a new name for a new VM.
	Target corev1.TypedLocalObjectReference `json:"target" protobuf:"bytes,1,opt,name=target"`
	// VirtualMachineSnapshotName names the snapshot to restore, in the same namespace.
	VirtualMachineSnapshotName string `json:"virtualMachineSnapshotName" protobuf:"bytes,2,opt,name=virtualMachineSnapshotName"`
	// TargetReadinessPolicy says what to do while the target runs. Hangar waits for it to
	// stop whatever the policy (WaitEventually).
	// +optional
	TargetReadinessPolicy *TargetReadinessPolicy `json:"targetReadinessPolicy,omitempty" protobuf:"bytes,3,opt,name=targetReadinessPolicy,casttype=TargetReadinessPolicy"`
	// VolumeRestorePolicy says how restored claims are named. Hangar names them
	// restore-<restore UID>-<volume> (RandomizeNames); InPlace is not supported.
	// +optional
	VolumeRestorePolicy *VolumeRestorePolicy `json:"volumeRestorePolicy,omitempty" protobuf:"bytes,4,opt,name=volumeRestorePolicy,casttype=VolumeRestorePolicy"`
	// VolumeRestoreOverrides change the name, labels or annotations of restored claims.
	// +optional
	// +listType=atomic
	VolumeRestoreOverrides []VolumeRestoreOverride `json:"volumeRestoreOverrides,omitempty" protobuf:"bytes,5,rep,name=volumeRestoreOverrides"`
	// Patches are JSON patches applied to a new target VirtualMachine before it is created:
	// each a JSON object such as {"op": "replace", "path": "/metadata/labels/app", "value": "b"}.
	// +optional
	// +listType=atomic
	Patches []string `json:"patches,omitempty" protobuf:"bytes,6,rep,name=patches"`
}

// VirtualMachineRestoreStatus is what the restore controller observed.
type VirtualMachineRestoreStatus struct {
	// Restores are the claims restored, one per volume.
	// +optional
	// +listType=atomic
	Restores []VolumeRestore `json:"restores,omitempty" protobuf:"bytes,1,rep,name=restores"`
	// RestoreTime is when the restore completed.
	// +optional
	// +nullable
	RestoreTime *metav1.Time `json:"restoreTime,omitempty" protobuf:"bytes,2,opt,name=restoreTime"`
	// DeletedDataVolumes are DataVolumes the restore deleted (Hangar deletes none).
	// +optional
	// +listType=set
	DeletedDataVolumes []string `json:"deletedDataVolumes,omitempty" protobuf:"bytes,3,rep,name=deletedDataVolumes"`
	// Complete is true once the target VM has the snapshot's spec and claims.
	// +optional
	Complete *bool `json:"complete,omitempty" protobuf:"varint,4,opt,name=complete"`
	// Conditions are Progressing and Ready.
	// +optional
	// +listType=atomic
	Conditions []Condition `json:"conditions,omitempty" protobuf:"bytes,5,rep,name=conditions"`
}

// VolumeRestore is one volume restored from its VolumeSnapshot into a new claim.
type VolumeRestore struct {
	// VolumeName is the volume's name in the VM's spec.
	VolumeName string `json:"volumeName" protobuf:"bytes,1,opt,name=volumeName"`
	// PersistentVolumeClaimName names the restored claim.
	PersistentVolumeClaimName string `json:"persistentVolumeClaim" protobuf:"bytes,2,opt,name=persistentVolumeClaim"`
	// VolumeSnapshotName names the VolumeSnapshot the claim is restored from.
	VolumeSnapshotName string `json:"volumeSnapshotName" protobuf:"bytes,3,opt,name=volumeSnapshotName"`
	// DataVolumeName names the DataVolume of the claim, for a volume whose DataVolume came
	// from a template: the restored VM's template of that name, which CDI fills with the
	// restored claim.
	// +optional
	DataVolumeName *string `json:"dataVolumeName,omitempty" protobuf:"bytes,4,opt,name=dataVolumeName"`
}

// VolumeRestoreOverride changes the name, labels or annotations of one restored claim.
type VolumeRestoreOverride struct {
	// VolumeName is the volume's name in the VM's spec.
	// +optional
	VolumeName string `json:"volumeName,omitempty" protobuf:"bytes,1,opt,name=volumeName"`
	// RestoreName is the name of the restored claim.
	// +optional
	RestoreName string `json:"restoreName,omitempty" protobuf:"bytes,2,opt,name=restoreName"`
	// Labels added to the restored claim.
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,3,rep,name=labels"`
	// Annotations added to the restored claim.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,4,rep,name=annotations"`
}
