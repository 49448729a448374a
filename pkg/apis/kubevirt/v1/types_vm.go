package v1

import (
	cdiv1beta1 "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +genclient
// +genclient:method=Start,verb=update,subresource=start,input=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.StartOptions,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status
// +genclient:method=Stop,verb=update,subresource=stop,input=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.StopOptions,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status
// +genclient:method=Restart,verb=update,subresource=restart,input=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.RestartOptions,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status
// +genclient:method=Migrate,verb=update,subresource=migrate,input=github.com/hangarvm/hangar/pkg/apis/kubevirt/v1.MigrateOptions,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachine handles the lifecycle of a VirtualMachineInstance: it creates, stops and
// re-creates the instance as its run strategy says, and keeps the instance's template so the
// machine survives restarts.
type VirtualMachine struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec contains the specification of the VirtualMachineInstance to create.
	Spec VirtualMachineSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status holds the current state of the VirtualMachine, written by the controller.
	// +optional
	Status VirtualMachineStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineList is a list of VirtualMachines.
type VirtualMachineList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachines.
	Items []VirtualMachine `json:"items" protobuf:"bytes,2,rep,name=items"`
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
	// +optional
	Running *bool `json:"running,omitempty" protobuf:"varint,1,opt,name=running"`

	// RunStrategy is the requested running state of the VirtualMachineInstance; mutually
	// exclusive with running. One of Always, Halted, Manual, RerunOnFailure, Once; Halted
	// when neither running nor runStrategy is given.
	// +optional
	RunStrategy *VirtualMachineRunStrategy `json:"runStrategy,omitempty" protobuf:"bytes,2,opt,name=runStrategy,casttype=VirtualMachineRunStrategy"`

	// Template is the VirtualMachineInstance the VirtualMachine creates. Changes take effect
	// at the next start.
	Template *VirtualMachineInstanceTemplateSpec `json:"template" protobuf:"bytes,3,opt,name=template"`

	// Instancetype names the instance type (instancetype.kubevirt.io) that gives the
	// instance its vCPUs, memory and other resources; the template may not set what it sets.
	// +optional
	Instancetype *InstancetypeMatcher `json:"instancetype,omitempty" protobuf:"bytes,4,opt,name=instancetype"`

	// Preference names the preference (instancetype.kubevirt.io) whose settings apply where
	// the template leaves them unset.
	// +optional
	Preference *PreferenceMatcher `json:"preference,omitempty" protobuf:"bytes,5,opt,name=preference"`

	// DataVolumeTemplates are the DataVolumes (cdi.kubevirt.io) the VirtualMachine makes and
	// owns; the template's dataVolume volumes name them. CDI must be installed.
	// +optional
	// +listType=atomic
	DataVolumeTemplates []DataVolumeTemplateSpec `json:"dataVolumeTemplates,omitempty" protobuf:"bytes,6,rep,name=dataVolumeTemplates"`
}

// DataVolumeTemplateSpec is a DataVolume the VirtualMachine makes: its name, labels and
// annotations, and CDI's DataVolume spec.
type DataVolumeTemplateSpec struct {
	// TypeMeta is accepted for compatibility with manifests that set it; it means nothing.
	// +nullable
	metav1.TypeMeta `json:",inline"`
	// Metadata of the DataVolume; name is required.
	// +nullable
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is the DataVolume's spec, as CDI defines it.
	Spec cdiv1beta1.DataVolumeSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is accepted for compatibility with manifests that set it; it means nothing.
	// +nullable
	// +optional
	Status *DataVolumeTemplateDummyStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// DataVolumeTemplateDummyStatus is empty: a template has no status.
type DataVolumeTemplateDummyStatus struct{}

// InferFromVolumeFailurePolicy says what happens when an instance type or preference cannot
// be inferred from a volume.
// +enum
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
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	// Kind is VirtualMachineInstancetype (of the VM's namespace) or
	// VirtualMachineClusterInstancetype, the default.
	// +optional
	Kind string `json:"kind,omitempty" protobuf:"bytes,2,opt,name=kind"`
	// RevisionName is the ControllerRevision holding the version of the instance type the VM
	// uses; set when the VM first uses it, or by the user to pin a version.
	// +optional
	RevisionName string `json:"revisionName,omitempty" protobuf:"bytes,3,opt,name=revisionName"`
	// InferFromVolume names a volume whose source's labels name the instance type.
	// +optional
	InferFromVolume string `json:"inferFromVolume,omitempty" protobuf:"bytes,4,opt,name=inferFromVolume"`
	// InferFromVolumeFailurePolicy is Reject (the default) or Ignore.
	// +optional
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy `json:"inferFromVolumeFailurePolicy,omitempty" protobuf:"bytes,5,opt,name=inferFromVolumeFailurePolicy,casttype=InferFromVolumeFailurePolicy"`
}

// PreferenceMatcher names a preference.
type PreferenceMatcher struct {
	// Name is the name of the VirtualMachinePreference or VirtualMachineClusterPreference.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	// Kind is VirtualMachinePreference (of the VM's namespace) or
	// VirtualMachineClusterPreference, the default.
	// +optional
	Kind string `json:"kind,omitempty" protobuf:"bytes,2,opt,name=kind"`
	// RevisionName is the ControllerRevision holding the version of the preference the VM
	// uses; set when the VM first uses it, or by the user to pin a version.
	// +optional
	RevisionName string `json:"revisionName,omitempty" protobuf:"bytes,3,opt,name=revisionName"`
	// InferFromVolume names a volume whose source's labels name the preference.
	// +optional
	InferFromVolume string `json:"inferFromVolume,omitempty" protobuf:"bytes,4,opt,name=inferFromVolume"`
	// InferFromVolumeFailurePolicy is Reject (the default) or Ignore.
	// +optional
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy `json:"inferFromVolumeFailurePolicy,omitempty" protobuf:"bytes,5,opt,name=inferFromVolumeFailurePolicy,casttype=InferFromVolumeFailurePolicy"`
}

// InstancetypeStatusRef is the instance type or preference a VM uses, and its revision.
type InstancetypeStatusRef struct {
	// Name of the instance type or preference.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	// Kind of the instance type or preference.
	// +optional
	Kind string `json:"kind,omitempty" protobuf:"bytes,2,opt,name=kind"`
	// ControllerRevisionRef is the revision of it the VM uses.
	// +optional
	ControllerRevisionRef *ControllerRevisionRef `json:"controllerRevisionRef,omitempty" protobuf:"bytes,3,opt,name=controllerRevisionRef"`
	// InferFromVolume is the volume it was inferred from.
	// +optional
	InferFromVolume string `json:"inferFromVolume,omitempty" protobuf:"bytes,4,opt,name=inferFromVolume"`
	// InferFromVolumeFailurePolicy is the policy it was inferred under.
	// +optional
	InferFromVolumeFailurePolicy *InferFromVolumeFailurePolicy `json:"inferFromVolumeFailurePolicy,omitempty" protobuf:"bytes,5,opt,name=inferFromVolumeFailurePolicy,casttype=InferFromVolumeFailurePolicy"`
}

// ControllerRevisionRef names a ControllerRevision.
type ControllerRevisionRef struct {
	// Name of the ControllerRevision.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
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
	// +optional
	Created bool `json:"created,omitempty" protobuf:"varint,1,opt,name=created"`
	// Ready means the instance of this VM is running and ready.
	// +optional
	Ready bool `json:"ready,omitempty" protobuf:"varint,2,opt,name=ready"`
	// PrintableStatus is a human-readable summary of the VM's state.
	// +optional
	PrintableStatus VirtualMachinePrintableStatus `json:"printableStatus,omitempty" protobuf:"bytes,3,opt,name=printableStatus,casttype=VirtualMachinePrintableStatus"`
	// Conditions are the latest observations of the VM's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []VirtualMachineCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,4,rep,name=conditions"`
	// StateChangeRequests are the start and stop requests the controller has yet to carry
	// out, in order; the start, stop and restart actions append them.
	// +optional
	// +listType=atomic
	StateChangeRequests []VirtualMachineStateChangeRequest `json:"stateChangeRequests,omitempty" protobuf:"bytes,5,rep,name=stateChangeRequests"`
	// StartFailure tracks consecutive failed starts for the crash-loop back-off.
	// +optional
	StartFailure *VirtualMachineStartFailure `json:"startFailure,omitempty" protobuf:"bytes,6,opt,name=startFailure"`
	// ObservedGeneration is the VM generation the current instance was created from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,7,opt,name=observedGeneration"`
	// DesiredGeneration is the VM generation the instance should match: the VM's latest.
	// +optional
	DesiredGeneration int64 `json:"desiredGeneration,omitempty" protobuf:"varint,8,opt,name=desiredGeneration"`
	// RunStrategy is the run strategy in effect, derived from spec.runStrategy or spec.running.
	// +optional
	RunStrategy VirtualMachineRunStrategy `json:"runStrategy,omitempty" protobuf:"bytes,9,opt,name=runStrategy,casttype=VirtualMachineRunStrategy"`
	// InstancetypeRef is the instance type the VM uses and its revision.
	// +optional
	InstancetypeRef *InstancetypeStatusRef `json:"instancetypeRef,omitempty" protobuf:"bytes,10,opt,name=instancetypeRef"`
	// PreferenceRef is the preference the VM uses and its revision.
	// +optional
	PreferenceRef *InstancetypeStatusRef `json:"preferenceRef,omitempty" protobuf:"bytes,11,opt,name=preferenceRef"`
	// SnapshotInProgress names the VirtualMachineSnapshot being taken of the VM.
	// +optional
	SnapshotInProgress *string `json:"snapshotInProgress,omitempty" protobuf:"bytes,12,opt,name=snapshotInProgress"`
	// RestoreInProgress names the VirtualMachineRestore being restored to the VM.
	// +optional
	RestoreInProgress *string `json:"restoreInProgress,omitempty" protobuf:"bytes,13,opt,name=restoreInProgress"`
	// MemoryDumpRequest is the VM's memory dump request and how far it got; the memorydump
	// and removememorydump actions set it.
	// +optional
	MemoryDumpRequest *VirtualMachineMemoryDumpRequest `json:"memoryDumpRequest,omitempty" protobuf:"bytes,14,opt,name=memoryDumpRequest"`
}

// VirtualMachineMemoryDumpRequest is a request to dump the guest's memory to a claim: the
// memorydump action's body (claimName), and its progress in the VM's status.
type VirtualMachineMemoryDumpRequest struct {
	// ClaimName is the claim the dump goes to.
	ClaimName string `json:"claimName" protobuf:"bytes,1,opt,name=claimName"`
	// Phase is how far the request got.
	Phase MemoryDumpPhase `json:"phase" protobuf:"bytes,2,opt,name=phase,casttype=MemoryDumpPhase"`
	// Remove asks to dissociate the claim from the VM.
	// +optional
	Remove bool `json:"remove,omitempty" protobuf:"varint,3,opt,name=remove"`
	// StartTimestamp is when the dump began.
	// +optional
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty" protobuf:"bytes,4,opt,name=startTimestamp"`
	// EndTimestamp is when it ended.
	// +optional
	EndTimestamp *metav1.Time `json:"endTimestamp,omitempty" protobuf:"bytes,5,opt,name=endTimestamp"`
	// FileName is the dump's file in the claim's root.
	// +optional
	FileName *string `json:"fileName,omitempty" protobuf:"bytes,6,opt,name=fileName"`
	// Message says why a dump failed.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,7,opt,name=message"`
}

// MemoryDumpPhase is how far a memory dump request got, as KubeVirt names the phases.
type MemoryDumpPhase string

const (
	// MemoryDumpAssociating: the claim is on its way to the guest's node.
	MemoryDumpAssociating MemoryDumpPhase = "Associating"
	// MemoryDumpInProgress: the guest's memory is being written.
	MemoryDumpInProgress MemoryDumpPhase = "InProgress"
	// MemoryDumpUnmounting: the dump is written; the claim leaves the node.
	MemoryDumpUnmounting MemoryDumpPhase = "Unmounting"
	// MemoryDumpCompleted: the dump is on the claim, which is free to use.
	MemoryDumpCompleted MemoryDumpPhase = "Completed"
	// MemoryDumpFailed: the dump failed; the message says why.
	MemoryDumpFailed MemoryDumpPhase = "Failed"
	// MemoryDumpDissociating: removememorydump was asked; the request goes once the claim left.
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
	Type VirtualMachineConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=VirtualMachineConditionType"`
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
	Action StateChangeRequestAction `json:"action" protobuf:"bytes,1,opt,name=action,casttype=StateChangeRequestAction"`
	// Data carries action-specific options, such as a start in the paused state.
	// +optional
	Data map[string]string `json:"data,omitempty" protobuf:"bytes,2,rep,name=data"`
	// UID is the instance a Stop request is aimed at; a Stop for another instance is dropped.
	// +optional
	UID *types.UID `json:"uid,omitempty" protobuf:"bytes,3,opt,name=uid,casttype=k8s.io/apimachinery/pkg/types.UID"`
}

// VirtualMachineStartFailure tracks consecutive start failures of a VM.
type VirtualMachineStartFailure struct {
	// LastFailedVMIUID is the UID of the instance that failed last.
	// +optional
	LastFailedVMIUID types.UID `json:"lastFailedVMIUID,omitempty" protobuf:"bytes,1,opt,name=lastFailedVMIUID,casttype=k8s.io/apimachinery/pkg/types.UID"`
	// RetryAfterTimestamp is the earliest time the next start is tried.
	// +optional
	RetryAfterTimestamp *metav1.Time `json:"retryAfterTimestamp,omitempty" protobuf:"bytes,2,opt,name=retryAfterTimestamp"`
	// ConsecutiveFailCount counts failed starts in a row.
	// +optional
	ConsecutiveFailCount int `json:"consecutiveFailCount,omitempty" protobuf:"varint,3,opt,name=consecutiveFailCount,casttype=int"`
}
