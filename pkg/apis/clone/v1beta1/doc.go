// Package v1beta1 holds clone.kubevirt.io/v1beta1: VirtualMachineClones, which ask for a
// VirtualMachine or a VirtualMachineSnapshot to be cloned into a new VirtualMachine, with
// KubeVirt's field names, so KubeVirt's manifests and clients work with Hangar unchanged.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/hangarvm/hangar/pkg/apis/clone
// +k8s:defaulter-gen=TypeMeta
// +groupName=clone.kubevirt.io
package v1beta1
