// Package v1beta1 holds instancetype.kubevirt.io/v1beta1: instance types (how much CPU and
// memory, and what else a VM's size fixes) and preferences (what a guest operating system
// runs best with), namespaced and cluster-wide, with KubeVirt's field names, so KubeVirt's
// instance types, preferences and the VMs that name them apply to Hangar unchanged.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/hangarvm/hangar/pkg/apis/instancetype
// +k8s:defaulter-gen=TypeMeta
// +groupName=instancetype.kubevirt.io
package v1beta1
