package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The bodies of the imperative actions (PUT .../start, stop, restart, migrate, pause, unpause,
// softreboot), as KubeVirt's clients send them. Every field is optional and an empty body is
// allowed. They are registered kinds so that the generated typed clients can send them.

// StartRequestDataPausedKey in a Start request's data asks for the instance to start paused.
const (
	StartRequestDataPausedKey  = "paused"
	StartRequestDataPausedTrue = "true"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// StartOptions are the options of the start action of a VirtualMachine.
type StartOptions struct {
	metav1.TypeMeta `json:",inline"`
	// Paused starts the instance paused.
	// +optional
	Paused bool `json:"paused,omitempty" protobuf:"varint,1,opt,name=paused"`
	// DryRun, when All, checks the request without changing anything.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,2,rep,name=dryRun"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// StopOptions are the options of the stop action of a VirtualMachine.
type StopOptions struct {
	metav1.TypeMeta `json:",inline"`
	// GracePeriod overrides the instance's termination grace period, in seconds; a stopped
	// VM (Halted) accepts a stop only to shorten the grace period of a shutdown under way.
	// +optional
	GracePeriod *int64 `json:"gracePeriod,omitempty" protobuf:"varint,1,opt,name=gracePeriod"`
	// DryRun, when All, checks the request without changing anything.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,2,rep,name=dryRun"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RestartOptions are the options of the restart action of a VirtualMachine.
type RestartOptions struct {
	metav1.TypeMeta `json:",inline"`
	// GracePeriodSeconds 0 forces the restart: the launcher pod is deleted at once. Only 0 is
	// supported.
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty" protobuf:"varint,1,opt,name=gracePeriodSeconds"`
	// DryRun, when All, checks the request without changing anything.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,2,rep,name=dryRun"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PauseOptions are the options of the pause action of a VirtualMachineInstance.
type PauseOptions struct {
	metav1.TypeMeta `json:",inline"`
	// DryRun, when All, checks the request without changing anything.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,1,rep,name=dryRun"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UnpauseOptions are the options of the unpause action of a VirtualMachineInstance.
type UnpauseOptions struct {
	metav1.TypeMeta `json:",inline"`
	// DryRun, when All, checks the request without changing anything.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,1,rep,name=dryRun"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SoftRebootOptions are the options of the softreboot action of a VirtualMachineInstance.
// KubeVirt's clients send no body; Hangar accepts a dry run as for pause.
type SoftRebootOptions struct {
	metav1.TypeMeta `json:",inline"`
	// DryRun, when All, checks the request without changing anything.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,1,rep,name=dryRun"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MigrateOptions are the options of the migrate action of a VirtualMachine: it creates a
// VirtualMachineInstanceMigration of the VM's running instance.
type MigrateOptions struct {
	metav1.TypeMeta `json:",inline"`
	// DryRun, when All, checks the request without creating the migration.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,1,rep,name=dryRun"`
	// AddedNodeSelector restricts the target nodes further; it never overrides the VM's own
	// node selector or affinity.
	// +optional
	AddedNodeSelector map[string]string `json:"addedNodeSelector,omitempty" protobuf:"bytes,2,rep,name=addedNodeSelector"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AddVolumeOptions are the body of the addvolume action of a VirtualMachine or an instance:
// the volume to hotplug and its disk.
type AddVolumeOptions struct {
	metav1.TypeMeta `json:",inline"`
	// Name is the new volume's (and its disk's).
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Disk is how the guest sees it: a disk on the scsi bus.
	Disk *Disk `json:"disk" protobuf:"bytes,2,opt,name=disk"`
	// VolumeSource is the claim or DataVolume to hotplug.
	VolumeSource *HotplugVolumeSource `json:"volumeSource" protobuf:"bytes,3,opt,name=volumeSource"`
	// DryRun, when All, checks the request without changing anything.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,4,rep,name=dryRun"`
}

// HotplugVolumeSource is what may be hotplugged: a claim or a DataVolume.
type HotplugVolumeSource struct {
	// PersistentVolumeClaim names a claim of the instance's namespace.
	// +optional
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty" protobuf:"bytes,1,opt,name=persistentVolumeClaim"`
	// DataVolume names a DataVolume of the instance's namespace (where CDI is served).
	// +optional
	DataVolume *DataVolumeSource `json:"dataVolume,omitempty" protobuf:"bytes,2,opt,name=dataVolume"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemoveVolumeOptions are the body of the removevolume action: the hotplugged volume to take
// out of the guest.
type RemoveVolumeOptions struct {
	metav1.TypeMeta `json:",inline"`
	// Name is the volume's.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// DryRun, when All, checks the request without changing anything.
	// +optional
	// +listType=atomic
	DryRun []string `json:"dryRun,omitempty" protobuf:"bytes,2,rep,name=dryRun"`
}
