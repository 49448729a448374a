package kubevirt

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceReplicaSet keeps a number of identical VirtualMachineInstances running.
type VirtualMachineInstanceReplicaSet struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta
	// Spec is the desired number of instances and their template.
	Spec VirtualMachineInstanceReplicaSetSpec
	// Status is the observed state of the set, written by the controller.
	Status VirtualMachineInstanceReplicaSetStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceReplicaSetList is a list of VirtualMachineInstanceReplicaSets.
type VirtualMachineInstanceReplicaSetList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items is the list of VirtualMachineInstanceReplicaSets.
	Items []VirtualMachineInstanceReplicaSet
}

// VirtualMachineInstanceReplicaSetSpec is the desired state of a replica set.
type VirtualMachineInstanceReplicaSetSpec struct {
	// Replicas is the number of instances to keep. Defaults to 1.
	Replicas *int32
	// Selector finds the instances the set owns; it must match the template's labels.
	Selector *metav1.LabelSelector
	// Template describes the instances the set creates.
	Template *VirtualMachineInstanceTemplateSpec
	// Paused stops the controller from creating or deleting instances.
	Paused bool
}

// VirtualMachineInstanceReplicaSetConditionType names a replica set condition.
type VirtualMachineInstanceReplicaSetConditionType string

const (
	// VirtualMachineInstanceReplicaSetReplicaFailure means creating or deleting an instance failed.
	VirtualMachineInstanceReplicaSetReplicaFailure VirtualMachineInstanceReplicaSetConditionType = "ReplicaFailure"
	// VirtualMachineInstanceReplicaSetReplicaPaused means the set is paused.
	VirtualMachineInstanceReplicaSetReplicaPaused VirtualMachineInstanceReplicaSetConditionType = "ReplicaPaused"
)

// VirtualMachineInstanceReplicaSetStatus is the observed state of a replica set.
type VirtualMachineInstanceReplicaSetStatus struct {
	// Replicas is the number of instances the set owns.
	Replicas int32
	// ReadyReplicas is the number of owned instances that are ready.
	ReadyReplicas int32
	// Conditions are the latest observations of the set's state.
	Conditions []VirtualMachineInstanceReplicaSetCondition
	// LabelSelector is the selector in string form, for the scale subresource and autoscalers.
	LabelSelector string
}

// VirtualMachineInstanceReplicaSetCondition is one observation of a replica set's state.
type VirtualMachineInstanceReplicaSetCondition struct {
	// Type of the condition.
	Type VirtualMachineInstanceReplicaSetConditionType
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
