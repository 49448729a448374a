// Package export is the internal (hub) version of the export.kubevirt.io API group: requests to
// serve a VirtualMachine's, a snapshot's or a claim's volumes for download over HTTPS with a
// token, for a bounded time. The registry works on these types; every served version converts
// to and from them.
//
// +k8s:deepcopy-gen=package
// +groupName=export.kubevirt.io
package export
