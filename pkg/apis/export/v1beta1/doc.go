// Package v1beta1 holds export.kubevirt.io/v1beta1: VirtualMachineExports, which ask for the
// volumes of a VirtualMachine, a VirtualMachineSnapshot or a PersistentVolumeClaim to be served
// for download over HTTPS with a token, with KubeVirt's field names, so KubeVirt's manifests
// and clients work with Hangar unchanged.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/hangarvm/hangar/pkg/apis/export
// +k8s:defaulter-gen=TypeMeta
// +groupName=export.kubevirt.io
package v1beta1
