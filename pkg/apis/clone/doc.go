// Package clone is the internal (hub) version of the clone.kubevirt.io API group: requests to
// clone a VirtualMachine, or a snapshot of one, into a new VirtualMachine. The registry works
// on these types; every served version converts to and from them.
//
// +k8s:deepcopy-gen=package
// +groupName=clone.kubevirt.io
package clone
