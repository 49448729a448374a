package kubevirt

import (
	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachine handles the lifecycle of a VirtualMachineInstance: it creates, stops and
// re-creates the instance as its run strategy says, and keeps the instance's template so the
// machine survives restarts.
type VirtualMachine struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec contains the specification of the VirtualMachineInstance to create.
	Spec VirtualMachineSpec
	// Status holds the current state of the VirtualMachine, written by the controller.
	Status VirtualMachineStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineList is a list of VirtualMachines.
type VirtualMachineList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachines.
	Items []VirtualMachine
}

// VirtualMachineRunStrategy says when a VirtualMachineInstance of the VirtualMachine should exist.
type VirtualMachineRunStrategy string

const (
	// RunStrategyAlways keeps an instance running: it is re-created whenever it stops.
	RunStrategyAlways VirtualMachineRunStrategy = "Always"
	// RunStrategyHalted keeps no instance running.
	RunStrategyHalted VirtualMachineRunStrategy = "Halted"
	// RunStrategyManual leaves starting and stopping to the start, stop and restart actions.
	RunStrategyManual VirtualMachineRunStrategy = "Manual"
	// RunStrategyRerunOnFailure re-creates the instance only after it failed.
	RunStrategyRerunOnFailure VirtualMachineRunStrategy = "RerunOnFailure"
	// RunStrategyOnce runs the instance once and never re-creates it.
	RunStrategyOnce VirtualMachineRunStrategy = "Once"
)

// VirtualMachineSpec describes how the VirtualMachineInstance of a VirtualMachine is created
// and when it runs.
type VirtualMachineSpec struct {
	// Running controls whether the associated VirtualMachineInstance is created or not.
	// Deprecated: use runStrategy instead; running and runStrategy are mutually exclusive.
	Running *bool

	// RunStrategy is the requested running state of the VirtualMachineInstance; mutually
	// exclusive with running. One of Always, Halted, Manual, RerunOnFailure, Once; Halted
	// when neither running nor runStrategy is given.
	RunStrategy *VirtualMachineRunStrategy

	// Template is the VirtualMachineInstance the VirtualMachine creates. Changes take effect
	// at the next start.
	Template *VirtualMachineInstanceTemplateSpec

	// Instancetype names the instance type that gives the instance its vCPUs, memory and
	// other resources; the template may not set what it sets.
	Instancetype *InstancetypeMatcher

	// Preference names the preference whose settings apply where the template leaves them
	// unset.
	Preference *PreferenceMatcher
	// DataVolumeTemplates are the DataVolumes (cdi.kubevirt.io) the VirtualMachine makes and owns.
	DataVolumeTemplates []DataVolumeTemplateSpec
}

// DataVolumeTemplateSpec is a DataVolume the VirtualMachine makes.
type DataVolumeTemplateSpec struct {
	// TypeMeta is kept as written; it means nothing.
	metav1.TypeMeta
	// ObjectMeta of the DataVolume.
	metav1.ObjectMeta
	// Spec is the DataVolume's spec.
	Spec cdiv1beta1.DataVolumeSpec
	// Status is kept as written; it means nothing.
	Status *DataVolumeTemplateDummyStatus
}

// DataVolumeTemplateDummyStatus is empty: a template has no status.
type DataVolumeTemplateDummyStatus struct{}

// InferFromVolumeFailurePolicy says what happens when an instance type or preference cannot
// be inferred from a volume.
type InferFromVolumeFailurePolicy string

const (
	// RejectInferFromVolumeFailure refuses the VirtualMachine.
	RejectInferFromVolumeFailure InferFromVolumeFailurePolicy = "Reject"
	// IgnoreInferFromVolumeFailure goes on without an instance type or preference.
	IgnoreInferFromVolumeFailure InferFromVolumeFailurePolicy = "Ignore"
)

// InstancetypeMatcher names an instance type.
type InstancetypeMatcher struct {
	// Name is the name of the VirtualMachineInstancetype or VirtualMachineClusterInstancetype.
	Name string
	// Kind is VirtualMachineInstancetype or VirtualMachineClusterInstancetype (the default).
	Kind string
	// RevisionName is the ControllerRevision holding the version the VM uses.
	RevisionName string
	// InferFromVolume names a volume whose source's labels name the instance type.
	InferFromVolume string
	// InferFromVolumeFailurePolicy is Reject (the default) or Ignore.
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy
}

// PreferenceMatcher names a preference.
type PreferenceMatcher struct {
	// Name is the name of the VirtualMachinePreference or VirtualMachineClusterPreference.
	Name string
	// Kind is VirtualMachinePreference or VirtualMachineClusterPreference (the default).
	Kind string
	// RevisionName is the ControllerRevision holding the version the VM uses.
	RevisionName string
	// InferFromVolume names a volume whose source's labels name the preference.
	InferFromVolume string
	// InferFromVolumeFailurePolicy is Reject (the default) or Ignore.
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy
}

// InstancetypeStatusRef is the instance type or preference a VM uses, and its revision.
type InstancetypeStatusRef struct {
	// Name of the instance type or preference.
	Name string
	// Kind of the instance type or preference.
	Kind string
	// ControllerRevisionRef is the revision of it the VM uses.
	ControllerRevisionRef *ControllerRevisionRef
	// InferFromVolume is the volume it was inferred from.
	InferFromVolume string
	// InferFromVolumeFailurePolicy is the policy it was inferred under.
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy
}

// ControllerRevisionRef names a ControllerRevision.
type ControllerRevisionRef struct {
	// Name of the ControllerRevision.
	Name string
}

// VirtualMachinePrintableStatus is a human-readable summary of a VirtualMachine's state,
// shown as STATUS by kubectl get.
type VirtualMachinePrintableStatus string

const (
	// VirtualMachineStatusStopped means the VM has no running instance and none is wanted.
	VirtualMachineStatusStopped VirtualMachinePrintableStatus = "Stopped"
	// VirtualMachineStatusProvisioning means resources the VM needs are being prepared.
	VirtualMachineStatusProvisioning VirtualMachinePrintableStatus = "Provisioning"
	// VirtualMachineStatusStarting means an instance was created and is not running yet.
	VirtualMachineStatusStarting VirtualMachinePrintableStatus = "Starting"
	// VirtualMachineStatusRunning means the instance is running.
	VirtualMachineStatusRunning VirtualMachinePrintableStatus = "Running"
	// VirtualMachineStatusPaused means the instance is paused.
	VirtualMachineStatusPaused VirtualMachinePrintableStatus = "Paused"
	// VirtualMachineStatusStopping means the instance is shutting down.
	VirtualMachineStatusStopping VirtualMachinePrintableStatus = "Stopping"
	// VirtualMachineStatusTerminating means the VM is being deleted.
	VirtualMachineStatusTerminating VirtualMachinePrintableStatus = "Terminating"
	// VirtualMachineStatusCrashLoopBackOff means instances keep failing and the next start waits.
	VirtualMachineStatusCrashLoopBackOff VirtualMachinePrintableStatus = "CrashLoopBackOff"
	// VirtualMachineStatusMigrating means the instance is moving to another node.
	VirtualMachineStatusMigrating VirtualMachinePrintableStatus = "Migrating"
	// VirtualMachineStatusUnknown means the state cannot be determined.
	VirtualMachineStatusUnknown VirtualMachinePrintableStatus = "Unknown"
	// VirtualMachineStatusUnschedulable means the instance's launcher pod cannot be scheduled.
	VirtualMachineStatusUnschedulable VirtualMachinePrintableStatus = "ErrorUnschedulable"
	// VirtualMachineStatusPvcNotFound means a claim the instance names does not exist.
	VirtualMachineStatusPvcNotFound VirtualMachinePrintableStatus = "ErrorPvcNotFound"
	// VirtualMachineStatusDataVolumeError means a DataVolume of the VM failed.
	VirtualMachineStatusDataVolumeError VirtualMachinePrintableStatus = "DataVolumeError"
	// VirtualMachineStatusWaitingForVolumeBinding means a claim of the VM waits for a volume.
	VirtualMachineStatusWaitingForVolumeBinding VirtualMachinePrintableStatus = "WaitingForVolumeBinding"
)

// VirtualMachineStatus is the observed state of a VirtualMachine.
type VirtualMachineStatus struct {
	// Created means an instance of this VM exists in the cluster.
	Created bool
	// Ready means the instance of this VM is running and ready.
	Ready bool
	// PrintableStatus is a human-readable summary of the VM's state.
	PrintableStatus VirtualMachinePrintableStatus
	// Conditions are the latest observations of the VM's state.
	Conditions []VirtualMachineCondition
	// StateChangeRequests are the start and stop requests the controller has yet to carry
	// out, in order; the start, stop and restart actions append them.
	StateChangeRequests []VirtualMachineStateChangeRequest
	// StartFailure tracks consecutive failed starts for the crash-loop back-off.
	StartFailure *VirtualMachineStartFailure
	// ObservedGeneration is the VM generation the current instance was created from.
	ObservedGeneration int64
	// DesiredGeneration is the VM generation the instance should match: the VM's latest.
	DesiredGeneration int64
	// RunStrategy is the run strategy in effect, derived from spec.runStrategy or spec.running.
	RunStrategy VirtualMachineRunStrategy
	// InstancetypeRef is the instance type the VM uses and its revision.
	InstancetypeRef *InstancetypeStatusRef
	// PreferenceRef is the preference the VM uses and its revision.
	PreferenceRef *InstancetypeStatusRef
	// SnapshotInProgress names the VirtualMachineSnapshot being taken of the VM.
	SnapshotInProgress *string
	// RestoreInProgress names the VirtualMachineRestore being restored to the VM.
	RestoreInProgress *string
	// MemoryDumpRequest is the VM's memory dump request and how far it got.
	MemoryDumpRequest *VirtualMachineMemoryDumpRequest
}

// VirtualMachineMemoryDumpRequest is a request to dump the guest's memory to a claim: the
// memorydump action's body, and its progress in the VM's status.
type VirtualMachineMemoryDumpRequest struct {
	ClaimName      string
	Phase          MemoryDumpPhase
	Remove         bool
	StartTimestamp *metav1.Time
	EndTimestamp   *metav1.Time
	FileName       *string
	Message        string
}

// MemoryDumpPhase is how far a memory dump request got.
type MemoryDumpPhase string

const (
	MemoryDumpAssociating  MemoryDumpPhase = "Associating"
	MemoryDumpInProgress   MemoryDumpPhase = "InProgress"
	MemoryDumpUnmounting   MemoryDumpPhase = "Unmounting"
	MemoryDumpCompleted    MemoryDumpPhase = "Completed"
	MemoryDumpFailed       MemoryDumpPhase = "Failed"
	MemoryDumpDissociating MemoryDumpPhase = "Dissociating"
)

// VirtualMachineConditionType names a VirtualMachine condition.
type VirtualMachineConditionType string

const (
	// VirtualMachineFailure means creating or running the instance failed.
	VirtualMachineFailure VirtualMachineConditionType = "Failure"
	// VirtualMachineReady mirrors the Ready condition of the instance.
	VirtualMachineReady VirtualMachineConditionType = "Ready"
	// VirtualMachinePaused means the instance is paused.
	VirtualMachinePaused VirtualMachineConditionType = "Paused"
)

// VirtualMachineCondition is one observation of a VirtualMachine's state.
type VirtualMachineCondition struct {
	// Type of the condition.
	Type VirtualMachineConditionType
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

// StateChangeRequestAction is the action a state change request asks for.
type StateChangeRequestAction string

const (
	// StartRequest asks the controller to create an instance.
	StartRequest StateChangeRequestAction = "Start"
	// StopRequest asks the controller to stop the current instance.
	StopRequest StateChangeRequestAction = "Stop"
)

// VirtualMachineStateChangeRequest asks the controller to start or stop the VM's instance.
type VirtualMachineStateChangeRequest struct {
	// Action is Start or Stop.
	Action StateChangeRequestAction
	// Data carries action-specific options, such as a start in the paused state.
	Data map[string]string
	// UID is the instance a Stop request is aimed at; a Stop for another instance is dropped.
	UID *types.UID
}

// VirtualMachineStartFailure tracks consecutive start failures of a VM.
type VirtualMachineStartFailure struct {
	// LastFailedVMIUID is the UID of the instance that failed last.
	LastFailedVMIUID types.UID
	// RetryAfterTimestamp is the earliest time the next start is tried.
	RetryAfterTimestamp *metav1.Time
	// ConsecutiveFailCount counts failed starts in a row.
	ConsecutiveFailCount int
}
