// Package v1 holds the kubevirt.io/v1 API: VirtualMachine, VirtualMachineInstance and
// VirtualMachineInstanceReplicaSet with KubeVirt's JSON field names, enums and defaults, so a
// KubeVirt manifest for a supported feature applies to Hangar unchanged.
//
// Its string types carry no +enum marker: KubeVirt's OpenAPI lists no values for them, and
// clients generated from an OpenAPI that did would have a named type where KubeVirt's have a
// string, so code written for one would not compile against the other.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/hangarvm/hangar/pkg/apis/kubevirt
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubevirt.io
package v1
