// Package v1beta1 holds the part of CDI's cdi.kubevirt.io/v1beta1 that kubevirt.io/v1 embeds:
// a DataVolume's spec, as a VirtualMachine's dataVolumeTemplates carry it. It is Hangar's copy
// of the fields and JSON names of CDI's API (kubevirt.io/containerized-data-importer-api), not
// an API group Hangar serves: DataVolumes themselves are CDI's, served by the cluster.
//
// A copy rather than CDI's module, because virt-api stores kubevirt.io/v1 in protobuf and
// go-to-protobuf needs every embedded type to have protobuf definitions, which CDI's do not;
// wire_test.go checks the copy against CDI's own types.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
package v1beta1
