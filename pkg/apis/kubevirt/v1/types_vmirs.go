package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceReplicaSet keeps a number of identical VirtualMachineInstances running.
type VirtualMachineInstanceReplicaSet struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Spec is the desired number of instances and their template.
	Spec VirtualMachineInstanceReplicaSetSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// Status is the observed state of the set, written by the controller.
	// +optional
	Status VirtualMachineInstanceReplicaSetStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtualMachineInstanceReplicaSetList is a list of VirtualMachineInstanceReplicaSets.
type VirtualMachineInstanceReplicaSetList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	// Items is the list of VirtualMachineInstanceReplicaSets.
	Items []VirtualMachineInstanceReplicaSet `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// VirtualMachineInstanceReplicaSetSpec is the desired state of a replica set.
type VirtualMachineInstanceReplicaSetSpec struct {
	// Replicas is the number of instances to keep. Defaults to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	// Selector finds the instances the set owns; it must match the template's labels.
	Selector *metav1.LabelSelector `json:"selector" protobuf:"bytes,2,opt,name=selector"`
	// Template describes the instances the set creates.
	Template *VirtualMachineInstanceTemplateSpec `json:"template" protobuf:"bytes,3,opt,name=template"`
	// Paused stops the controller from creating or deleting instances.
	// +optional
	Paused bool `json:"paused,omitempty" protobuf:"varint,4,opt,name=paused"`
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
	// +optional
	Replicas int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	// ReadyReplicas is the number of owned instances that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty" protobuf:"varint,2,opt,name=readyReplicas"`
	// Conditions are the latest observations of the set's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []VirtualMachineInstanceReplicaSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,3,rep,name=conditions"`
	// LabelSelector is the selector in string form, for the scale subresource and autoscalers.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty" protobuf:"bytes,4,opt,name=labelSelector"`
}

// VirtualMachineInstanceReplicaSetCondition is one observation of a replica set's state.
type VirtualMachineInstanceReplicaSetCondition struct {
	// Type of the condition.
	Type VirtualMachineInstanceReplicaSetConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=VirtualMachineInstanceReplicaSetConditionType"`
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
