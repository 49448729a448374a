package kubevirt

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceMigration asks for one live migration of an instance to another node
// and records how it went. Its spec cannot change after creation.
type VirtualMachineInstanceMigration struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec names the instance and restricts where it may go.
	Spec VirtualMachineInstanceMigrationSpec
	// Status is the observed state of the migration, written by the controller.
	Status VirtualMachineInstanceMigrationStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceMigrationList is a list of VirtualMachineInstanceMigrations.
type VirtualMachineInstanceMigrationList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachineInstanceMigrations.
	Items []VirtualMachineInstanceMigration
}

// VirtualMachineInstanceMigrationSpec is what a migration asks for.
type VirtualMachineInstanceMigrationSpec struct {
	// VMIName is the instance to migrate, in the migration's namespace.
	VMIName string
	// AddedNodeSelector restricts the target nodes further; it never overrides the instance's
	// own node selector or affinity (on a key collision the instance's value wins).
	AddedNodeSelector map[string]string
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
	Phase VirtualMachineInstanceMigrationPhase
	// Conditions are the latest observations of the migration's state.
	Conditions []VirtualMachineInstanceMigrationCondition
	// PhaseTransitionTimestamps records when the migration entered each phase.
	PhaseTransitionTimestamps []VirtualMachineInstanceMigrationPhaseTransitionTimestamp
	// MigrationState is the instance's migration state, copied when the migration ends.
	MigrationState *VirtualMachineInstanceMigrationState
}

// VirtualMachineInstanceMigrationCondition is one observation of a migration's state.
type VirtualMachineInstanceMigrationCondition struct {
	// Type of the condition.
	Type VirtualMachineInstanceMigrationConditionType
	// Status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus
	// LastProbeTime is when the condition was last checked.
	LastProbeTime metav1.Time
	// LastTransitionTime is when the condition last changed status.
	LastTransitionTime metav1.Time
	// Reason is a one-word CamelCase reason for the condition's last transition.
	Reason string
	// Message is a human-readable explanation of the last transition.
	Message string
}

// VirtualMachineInstanceMigrationPhaseTransitionTimestamp is when a migration entered a phase.
type VirtualMachineInstanceMigrationPhaseTransitionTimestamp struct {
	// Phase entered.
	Phase VirtualMachineInstanceMigrationPhase
	// PhaseTransitionTimestamp is when the phase was entered.
	PhaseTransitionTimestamp metav1.Time
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
// migration, written by the controller and the node agents.
type VirtualMachineInstanceMigrationState struct {
	// StartTimestamp is when the transfer began.
	StartTimestamp *metav1.Time
	// EndTimestamp is when the migration ended.
	EndTimestamp *metav1.Time
	// TargetNodeDomainReadyTimestamp is when the target node saw the guest active.
	TargetNodeDomainReadyTimestamp *metav1.Time
	// TargetNodeDomainDetected: the target node has seen the guest start.
	TargetNodeDomainDetected bool
	// TargetNodeAddress is the address the source dials to reach the target node.
	TargetNodeAddress string
	// TargetDirectMigrationNodePorts are the ports the target node opened for this
	// migration, by their use.
	TargetDirectMigrationNodePorts map[string]int32
	// TargetNode is the node the instance moves to.
	TargetNode string
	// TargetPod is the launcher pod the instance moves to.
	TargetPod string
	// SourceNode is the node the instance moves from.
	SourceNode string
	// SourcePod is the launcher pod the instance moves from.
	SourcePod string
	// Completed: the migration completed.
	Completed bool
	// Failed: the migration failed.
	Failed bool
	// AbortRequested: the migration is to be aborted.
	AbortRequested bool
	// AbortStatus is how the abort went.
	AbortStatus MigrationAbortStatus
	// FailureReason says why the migration failed.
	FailureReason string
	// MigrationUid is the UID of the VirtualMachineInstanceMigration being carried out.
	MigrationUid types.UID
	// Mode is how memory is being transferred: PreCopy, PostCopy or Paused.
	Mode MigrationMode
	// MigrationConfiguration is the cluster's migration configuration when the migration began.
	MigrationConfiguration *MigrationConfiguration
}

// MigrationConfiguration is the cluster's migration configuration, as applied to one migration.
type MigrationConfiguration struct {
	// ParallelMigrationsPerCluster is how many migrations may run at once in the cluster.
	ParallelMigrationsPerCluster *uint32
	// ParallelOutboundMigrationsPerNode is how many migrations may leave one node at once.
	ParallelOutboundMigrationsPerNode *uint32
	// BandwidthPerMigration limits each migration's transfer rate, per second; 0 is no limit.
	BandwidthPerMigration *resource.Quantity
	// CompletionTimeoutPerGiB is how many seconds per GiB of guest memory a migration may take.
	CompletionTimeoutPerGiB *int64
	// ProgressTimeout is how many seconds a migration may go without progress.
	ProgressTimeout *int64
	// AllowAutoConverge lets the guest's vCPUs be throttled so the migration converges.
	AllowAutoConverge *bool
	// AllowPostCopy switches to post-copy when the completion timeout is reached.
	AllowPostCopy *bool
}
