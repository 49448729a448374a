// Package v1beta1 holds snapshot.kubevirt.io/v1beta1: VirtualMachineSnapshots (a VM's spec and
// the VolumeSnapshots of its claims), the VirtualMachineSnapshotContents that keep them, and
// VirtualMachineRestores, with KubeVirt's field names, so KubeVirt's manifests and clients
// work with Hangar unchanged.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/hangarvm/hangar/pkg/apis/snapshot
// +k8s:defaulter-gen=TypeMeta
// +groupName=snapshot.kubevirt.io
package v1beta1
