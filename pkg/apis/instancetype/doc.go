// Package instancetype is the internal (hub) version of the instancetype.kubevirt.io API
// group: instance types and preferences, namespaced and cluster-wide. The registry works on
// these types; every served version converts to and from them.
//
// +k8s:deepcopy-gen=package
// +groupName=instancetype.kubevirt.io
package instancetype
