package snapshot

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// DefaultFailureDeadline is how long a snapshot may stay unready before it fails, when its
// spec names no failureDeadline (KubeVirt's value).
const DefaultFailureDeadline = 5 * time.Minute

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineSnapshot asks for a snapshot of a VirtualMachine: its spec and the
// VolumeSnapshots of its claims.
type VirtualMachineSnapshot struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec   VirtualMachineSnapshotSpec
	Status *VirtualMachineSnapshotStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineSnapshotList is a list of VirtualMachineSnapshots.
type VirtualMachineSnapshotList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []VirtualMachineSnapshot
}

// DeletionPolicy says what becomes of a snapshot's content when the snapshot is deleted.
type DeletionPolicy string

const (
	// DeletionPolicyDelete deletes the content (and its VolumeSnapshots) with the snapshot.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain keeps the content after the snapshot is gone.
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// VirtualMachineSnapshotSpec names what to snapshot.
type VirtualMachineSnapshotSpec struct {
	// Source is the VirtualMachine to snapshot.
	Source corev1.TypedLocalObjectReference
	// DeletionPolicy of the content; Delete when unset.
	DeletionPolicy *DeletionPolicy
	// FailureDeadline is how long the snapshot may take before it fails; 0 waits forever.
	FailureDeadline *metav1.Duration
}

// Indication tells how a snapshot was taken.
type Indication string

const (
	// IndicationOnline: the VM was running.
	IndicationOnline Indication = "Online"
	// IndicationNoGuestAgent: no guest agent was connected, so file systems were not frozen.
	IndicationNoGuestAgent Indication = "NoGuestAgent"
	// IndicationGuestAgent: the guest agent froze the file systems.
	IndicationGuestAgent Indication = "GuestAgent"
	// IndicationQuiesceFailed: freezing through the guest agent failed.
	IndicationQuiesceFailed Indication = "QuiesceFailed"
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
	SourceUID                         *types.UID
	VirtualMachineSnapshotContentName *string
	CreationTime                      *metav1.Time
	Phase                             VirtualMachineSnapshotPhase
	ReadyToUse                        *bool
	Error                             *Error
	Conditions                        []Condition
	Indications                       []Indication
	SnapshotVolumes                   *SnapshotVolumesLists
}

// SnapshotVolumesLists names the VM's volumes a snapshot includes and those it cannot.
type SnapshotVolumesLists struct {
	IncludedVolumes []string
	ExcludedVolumes []string
}

// Error is the last error of a snapshot, its content or a volume snapshot.
type Error struct {
	Time    *metav1.Time
	Message *string
}

// ConditionType names a condition of a snapshot or restore.
type ConditionType string

const (
	ConditionReady       ConditionType = "Ready"
	ConditionProgressing ConditionType = "Progressing"
	ConditionFailure     ConditionType = "Failure"
)

// Condition is one observation of a snapshot or restore.
type Condition struct {
	Type               ConditionType
	Status             corev1.ConditionStatus
	LastProbeTime      metav1.Time
	LastTransitionTime metav1.Time
	Reason             string
	Message            string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineSnapshotContent keeps what a snapshot took: the VM as it was and the
// VolumeSnapshot of each of its claims.
type VirtualMachineSnapshotContent struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec   VirtualMachineSnapshotContentSpec
	Status *VirtualMachineSnapshotContentStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineSnapshotContentList is a list of VirtualMachineSnapshotContents.
type VirtualMachineSnapshotContentList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []VirtualMachineSnapshotContent
}

// VirtualMachineSnapshotContentSpec is the content of a snapshot.
type VirtualMachineSnapshotContentSpec struct {
	VirtualMachineSnapshotName *string
	Source                     SourceSpec
	VolumeBackups              []VolumeBackup
}

// VirtualMachine is a VirtualMachine as a snapshot keeps it.
type VirtualMachine struct {
	metav1.ObjectMeta
	Spec   kubevirt.VirtualMachineSpec
	Status kubevirt.VirtualMachineStatus
}

// SourceSpec is what was snapshotted.
type SourceSpec struct {
	VirtualMachine *VirtualMachine
}

// PersistentVolumeClaim is a claim as a snapshot keeps it.
type PersistentVolumeClaim struct {
	metav1.ObjectMeta
	Spec corev1.PersistentVolumeClaimSpec
}

// VolumeBackup is the snapshot of one of the VM's volumes.
type VolumeBackup struct {
	VolumeName            string
	PersistentVolumeClaim PersistentVolumeClaim
	VolumeSnapshotName    *string
}

// VirtualMachineSnapshotContentStatus is what the snapshot controller observed of the content.
type VirtualMachineSnapshotContentStatus struct {
	CreationTime         *metav1.Time
	ReadyToUse           *bool
	Error                *Error
	VolumeSnapshotStatus []VolumeSnapshotStatus
}

// VolumeSnapshotStatus is the state of one VolumeSnapshot of the content.
type VolumeSnapshotStatus struct {
	VolumeSnapshotName string
	CreationTime       *metav1.Time
	ReadyToUse         *bool
	Error              *Error
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineRestore asks for a snapshot to be restored to a VirtualMachine.
type VirtualMachineRestore struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec   VirtualMachineRestoreSpec
	Status *VirtualMachineRestoreStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineRestoreList is a list of VirtualMachineRestores.
type VirtualMachineRestoreList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []VirtualMachineRestore
}

// TargetReadinessPolicy says what a restore does while its target VM is not ready for it.
type TargetReadinessPolicy string

const (
	TargetReadinessStopTarget      TargetReadinessPolicy = "StopTarget"
	TargetReadinessWaitGracePeriod TargetReadinessPolicy = "WaitGracePeriod"
	TargetReadinessFailImmediate   TargetReadinessPolicy = "FailImmediate"
	TargetReadinessWaitEventually  TargetReadinessPolicy = "WaitEventually"
)

// VolumeRestorePolicy says how restored claims are named.
type VolumeRestorePolicy string

const (
	VolumeRestorePolicyRandomizeNames VolumeRestorePolicy = "RandomizeNames"
	VolumeRestorePolicyInPlace        VolumeRestorePolicy = "InPlace"
)

// VirtualMachineRestoreSpec names the snapshot and the VM it is restored to.
type VirtualMachineRestoreSpec struct {
	Target                     corev1.TypedLocalObjectReference
	VirtualMachineSnapshotName string
	TargetReadinessPolicy      *TargetReadinessPolicy
	VolumeRestorePolicy        *VolumeRestorePolicy
	VolumeRestoreOverrides     []VolumeRestoreOverride
	Patches                    []string
}

// VirtualMachineRestoreStatus is what the restore controller observed.
type VirtualMachineRestoreStatus struct {
	Restores           []VolumeRestore
	RestoreTime        *metav1.Time
	DeletedDataVolumes []string
	Complete           *bool
	Conditions         []Condition
}

// VolumeRestore is one volume restored from its VolumeSnapshot into a new claim.
type VolumeRestore struct {
	VolumeName                string
	PersistentVolumeClaimName string
	VolumeSnapshotName        string
	DataVolumeName            *string
}

// VolumeRestoreOverride changes the name, labels or annotations of one restored claim.
type VolumeRestoreOverride struct {
	VolumeName  string
	RestoreName string
	Labels      map[string]string
	Annotations map[string]string
}
