// Package kubevirt is the internal (hub) version of the kubevirt.io API group. The registry
// works on these types; every served version converts to and from them.
//
// +k8s:deepcopy-gen=package
// +groupName=kubevirt.io
package kubevirt
