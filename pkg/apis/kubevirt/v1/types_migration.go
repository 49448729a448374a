package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels, annotations and the finalizer of migrations, as KubeVirt names them.
const (
	// MigrationSelectorLabel carries the instance's name on every migration, so clients
	// (virtctl migrate-cancel) find an instance's migrations with a label selector. virt-api
	// sets it at creation.
	MigrationSelectorLabel = "kubevirt.io/vmi-name"
	// VirtualMachineInstanceMigrationFinalizer keeps a deleted migration until the controller
	// has aborted it and cleaned up its target pod. virt-api adds it at creation; the
	// migration controller removes it once the migration is final.
	VirtualMachineInstanceMigrationFinalizer = "kubevirt.io/migrationJobFinalize"
	// EvacuationMigrationAnnotation marks a migration created to evacuate a node.
	EvacuationMigrationAnnotation = "kubevirt.io/evacuationMigration"
	// WorkloadUpdateMigrationAnnotation marks a migration created to move an instance to a
	// launcher of the installed version; its value is that launcher image.
	WorkloadUpdateMigrationAnnotation = "kubevirt.io/workloadUpdateMigration"
	// OutdatedLauncherImageLabel marks an instance whose launcher is of an older version.
	OutdatedLauncherImageLabel = "kubevirt.io/outdatedLauncherImage"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceMigration asks for one live migration of an instance to another node
// and records how it went. Its spec cannot change after creation.
type VirtualMachineInstanceMigration struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec names the instance and restricts where it may go.
	Spec VirtualMachineInstanceMigrationSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is the observed state of the migration, written by the controller.
	// +optional
	Status VirtualMachineInstanceMigrationStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceMigrationList is a list of VirtualMachineInstanceMigrations.
type VirtualMachineInstanceMigrationList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineInstanceMigrations.
	Items []VirtualMachineInstanceMigration `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineInstanceMigrationSpec is what a migration asks for.
type VirtualMachineInstanceMigrationSpec struct {
	// VMIName is the instance to migrate, in the migration's namespace.
	VMIName string `json:"vmiName,omitempty" protobuf:"bytes,1,opt,name=vmiName"`
	// AddedNodeSelector restricts the target nodes further; it never overrides the instance's
	// own node selector or affinity (on a key collision the instance's value wins).
	// +optional
	AddedNodeSelector map[string]string `json:"addedNodeSelector,omitempty" protobuf:"bytes,2,rep,name=addedNodeSelector"`
}

// VirtualMachineInstanceMigrationPhase is where a migration is in its lifecycle.
type VirtualMachineInstanceMigrationPhase string

const (
	// MigrationPhaseUnset is the phase of a newly created migration.
	MigrationPhaseUnset VirtualMachineInstanceMigrationPhase = ""
	// MigrationPending: the migration was accepted and waits for its turn.
	MigrationPending VirtualMachineInstanceMigrationPhase = "Pending"
	// MigrationScheduling: the target pod is being scheduled.
	MigrationScheduling VirtualMachineInstanceMigrationPhase = "Scheduling"
	// MigrationScheduled: the target pod runs on its node.
	MigrationScheduled VirtualMachineInstanceMigrationPhase = "Scheduled"
	// MigrationPreparingTarget: the target node prepares to receive the guest.
	MigrationPreparingTarget VirtualMachineInstanceMigrationPhase = "PreparingTarget"
	// MigrationTargetReady: the target listens; the source may start.
	MigrationTargetReady VirtualMachineInstanceMigrationPhase = "TargetReady"
	// MigrationRunning: the guest's state is being transferred.
	MigrationRunning VirtualMachineInstanceMigrationPhase = "Running"
	// MigrationSucceeded: the guest runs on the target node.
	MigrationSucceeded VirtualMachineInstanceMigrationPhase = "Succeeded"
	// MigrationFailed: the migration ended without moving the guest.
	MigrationFailed VirtualMachineInstanceMigrationPhase = "Failed"
)

// VirtualMachineInstanceMigrationConditionType names a migration condition.
type VirtualMachineInstanceMigrationConditionType string

const (
	// MigrationAbortRequested: the migration was deleted (cancelled) while it ran.
	MigrationAbortRequested VirtualMachineInstanceMigrationConditionType = "migrationAbortRequested"
	// MigrationRejectedByResourceQuota: the target pod exceeds the namespace's quota.
	MigrationRejectedByResourceQuota VirtualMachineInstanceMigrationConditionType = "migrationRejectedByResourceQuota"
)

// VirtualMachineInstanceMigrationStatus is the observed state of a migration.
type VirtualMachineInstanceMigrationStatus struct {
	// Phase is where the migration is in its lifecycle.
	// +optional
	Phase VirtualMachineInstanceMigrationPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=VirtualMachineInstanceMigrationPhase"`
	// Conditions are the latest observations of the migration's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []VirtualMachineInstanceMigrationCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,2,rep,name=conditions"`
	// PhaseTransitionTimestamps records when the migration entered each phase.
	// +optional
	// +listType=atomic
	PhaseTransitionTimestamps []VirtualMachineInstanceMigrationPhaseTransitionTimestamp `json:"phaseTransitionTimestamps,omitempty" protobuf:"bytes,3,rep,name=phaseTransitionTimestamps"`
	// MigrationState is the instance's migration state, copied when the migration ends.
	// +optional
	MigrationState *VirtualMachineInstanceMigrationState `json:"migrationState,omitempty" protobuf:"bytes,4,opt,name=migrationState"`
}

// VirtualMachineInstanceMigrationCondition is one observation of a migration's state.
type VirtualMachineInstanceMigrationCondition struct {
	// Type of the condition.
	Type VirtualMachineInstanceMigrationConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=VirtualMachineInstanceMigrationConditionType"`
	// Status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status" protobuf:"bytes,2,opt,name=status,casttype=k8s.io/api/core/v1.ConditionStatus"`
	// LastProbeTime is when the condition was last checked.
	// +optional
	// +nullable
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty" protobuf:"bytes,3,opt,name=lastProbeTime"`
	// LastTransitionTime is when the condition last changed status.
	// +optional
	// +nullable
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty" protobuf:"bytes,4,opt,name=lastTransitionTime"`
	// Reason is a one-word CamelCase reason for the condition's last transition.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,5,opt,name=reason"`
	// Message is a human-readable explanation of the last transition.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,6,opt,name=message"`
}

// VirtualMachineInstanceMigrationPhaseTransitionTimestamp is when a migration entered a phase.
type VirtualMachineInstanceMigrationPhaseTransitionTimestamp struct {
	// Phase entered.
	// +optional
	Phase VirtualMachineInstanceMigrationPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=VirtualMachineInstanceMigrationPhase"`
	// PhaseTransitionTimestamp is when the phase was entered.
	// +optional
	PhaseTransitionTimestamp metav1.Time `json:"phaseTransitionTimestamp,omitempty" protobuf:"bytes,2,opt,name=phaseTransitionTimestamp"`
}

// MigrationAbortStatus is how the abort of a migration went.
type MigrationAbortStatus string

const (
	// MigrationAbortSucceeded: the migration was aborted; the guest stays on the source.
	MigrationAbortSucceeded MigrationAbortStatus = "Succeeded"
	// MigrationAbortFailed: the abort failed (the migration had gone too far, say).
	MigrationAbortFailed MigrationAbortStatus = "Failed"
	// MigrationAbortInProgress: the abort is under way.
	MigrationAbortInProgress MigrationAbortStatus = "Aborting"
)

// MigrationMode is how the guest's memory is being transferred.
type MigrationMode string

const (
	// MigrationPreCopy: memory is copied while the guest runs on the source.
	MigrationPreCopy MigrationMode = "PreCopy"
	// MigrationPostCopy: the guest runs on the target and fetches its memory on demand.
	MigrationPostCopy MigrationMode = "PostCopy"
	// MigrationPaused: the guest is paused while it is migrated.
	MigrationPaused MigrationMode = "Paused"
)

// VirtualMachineInstanceMigrationMethod says whether the guest's local disks travel with it.
type VirtualMachineInstanceMigrationMethod string

const (
	// BlockMigration copies the guest's local (not shared) disks to the target.
	BlockMigration VirtualMachineInstanceMigrationMethod = "BlockMigration"
	// LiveMigration moves memory and device state only: every disk is shared.
	LiveMigration VirtualMachineInstanceMigrationMethod = "LiveMigration"
)

// VirtualMachineInstanceMigrationState is the state of an instance's current (or last)
// migration, written by the controller and the node agents. The JSON names are KubeVirt's.
type VirtualMachineInstanceMigrationState struct {
	// StartTimestamp is when the transfer began.
	// +optional
	// +nullable
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty" protobuf:"bytes,1,opt,name=startTimestamp"`
	// EndTimestamp is when the migration ended.
	// +optional
	// +nullable
	EndTimestamp *metav1.Time `json:"endTimestamp,omitempty" protobuf:"bytes,2,opt,name=endTimestamp"`
	// TargetNodeDomainReadyTimestamp is when the target node saw the guest active.
	// +optional
	TargetNodeDomainReadyTimestamp *metav1.Time `json:"targetNodeDomainReadyTimestamp,omitempty" protobuf:"bytes,3,opt,name=targetNodeDomainReadyTimestamp"`
	// TargetNodeDomainDetected: the target node has seen the guest start.
	// +optional
	TargetNodeDomainDetected bool `json:"targetNodeDomainDetected,omitempty" protobuf:"varint,4,opt,name=targetNodeDomainDetected"`
	// TargetNodeAddress is the address the source dials to reach the target node.
	// +optional
	TargetNodeAddress string `json:"targetNodeAddress,omitempty" protobuf:"bytes,5,opt,name=targetNodeAddress"`
	// TargetDirectMigrationNodePorts are the ports the target node opened for this
	// migration, by their use.
	// +optional
	TargetDirectMigrationNodePorts map[string]int32 `json:"targetDirectMigrationNodePorts,omitempty" protobuf:"bytes,6,rep,name=targetDirectMigrationNodePorts"`
	// TargetNode is the node the instance moves to.
	// +optional
	TargetNode string `json:"targetNode,omitempty" protobuf:"bytes,7,opt,name=targetNode"`
	// TargetPod is the launcher pod the instance moves to.
	// +optional
	TargetPod string `json:"targetPod,omitempty" protobuf:"bytes,8,opt,name=targetPod"`
	// SourceNode is the node the instance moves from.
	// +optional
	SourceNode string `json:"sourceNode,omitempty" protobuf:"bytes,9,opt,name=sourceNode"`
	// SourcePod is the launcher pod the instance moves from.
	// +optional
	SourcePod string `json:"sourcePod,omitempty" protobuf:"bytes,10,opt,name=sourcePod"`
	// Completed: the migration completed.
	// +optional
	Completed bool `json:"completed,omitempty" protobuf:"varint,11,opt,name=completed"`
	// Failed: the migration failed.
	// +optional
	Failed bool `json:"failed,omitempty" protobuf:"varint,12,opt,name=failed"`
	// AbortRequested: the migration is to be aborted.
	// +optional
	AbortRequested bool `json:"abortRequested,omitempty" protobuf:"varint,13,opt,name=abortRequested"`
	// AbortStatus is how the abort went.
	// +optional
	AbortStatus MigrationAbortStatus `json:"abortStatus,omitempty" protobuf:"bytes,14,opt,name=abortStatus,casttype=MigrationAbortStatus"`
	// FailureReason says why the migration failed.
	// +optional
	FailureReason string `json:"failureReason,omitempty" protobuf:"bytes,15,opt,name=failureReason"`
	// MigrationUid is the UID of the VirtualMachineInstanceMigration being carried out (spelled
	// as its JSON name, KubeVirt's migrationUid, so the API rules hold).
	// +optional
	MigrationUid types.UID `json:"migrationUid,omitempty" protobuf:"bytes,16,opt,name=migrationUid,casttype=k8s.io/apimachinery/pkg/types.UID"`
	// Mode is how memory is being transferred: PreCopy, PostCopy or Paused.
	// +optional
	Mode MigrationMode `json:"mode,omitempty" protobuf:"bytes,17,opt,name=mode,casttype=MigrationMode"`
	// MigrationConfiguration is the cluster's migration configuration when the migration began.
	// +optional
	MigrationConfiguration *MigrationConfiguration `json:"migrationConfiguration,omitempty" protobuf:"bytes,18,opt,name=migrationConfiguration"`
}

// MigrationConfiguration is the cluster's migration configuration, as applied to one
// migration (KubeVirt's field names, a subset of its options).
type MigrationConfiguration struct {
	// ParallelMigrationsPerCluster is how many migrations may run at once in the cluster.
	// +optional
	ParallelMigrationsPerCluster *uint32 `json:"parallelMigrationsPerCluster,omitempty" protobuf:"varint,1,opt,name=parallelMigrationsPerCluster"`
	// ParallelOutboundMigrationsPerNode is how many migrations may leave one node at once.
	// +optional
	ParallelOutboundMigrationsPerNode *uint32 `json:"parallelOutboundMigrationsPerNode,omitempty" protobuf:"varint,2,opt,name=parallelOutboundMigrationsPerNode"`
	// BandwidthPerMigration limits each migration's transfer rate, per second; 0 is no limit.
	// +optional
	BandwidthPerMigration *resource.Quantity `json:"bandwidthPerMigration,omitempty" protobuf:"bytes,3,opt,name=bandwidthPerMigration"`
	// CompletionTimeoutPerGiB is how many seconds per GiB of guest memory a migration may take.
	// +optional
	CompletionTimeoutPerGiB *int64 `json:"completionTimeoutPerGiB,omitempty" protobuf:"varint,4,opt,name=completionTimeoutPerGiB"`
	// ProgressTimeout is how many seconds a migration may go without progress.
	// +optional
	ProgressTimeout *int64 `json:"progressTimeout,omitempty" protobuf:"varint,5,opt,name=progressTimeout"`
	// AllowAutoConverge lets the guest's vCPUs be throttled so the migration converges.
	// +optional
	AllowAutoConverge *bool `json:"allowAutoConverge,omitempty" protobuf:"varint,6,opt,name=allowAutoConverge"`
	// AllowPostCopy switches to post-copy when the completion timeout is reached.
	// +optional
	AllowPostCopy *bool `json:"allowPostCopy,omitempty" protobuf:"varint,7,opt,name=allowPostCopy"`
}
