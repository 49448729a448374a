// Package snapshot is the internal (hub) version of the snapshot.kubevirt.io API group:
// snapshots of VirtualMachines, the content that keeps what a snapshot took, and restores.
// The registry works on these types; every served version converts to and from them.
//
// +k8s:deepcopy-gen=package
// +groupName=snapshot.kubevirt.io
package snapshot
