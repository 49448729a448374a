// Package v1alpha1 holds hangarvm.io/v1alpha1: the Hangar object, Hangar's installation in a
// cluster, which hangar-operator reconciles. It is a CustomResourceDefinition served by
// kube-apiserver itself (virt-api, which serves kubevirt.io, is one of the things it installs),
// in a group of its own, with KubeVirt's field names where KubeVirt's KubeVirt object has the
// same setting.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +groupName=hangarvm.io
package v1alpha1
