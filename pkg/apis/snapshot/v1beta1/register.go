package v1beta1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of VM snapshots and restores.
const GroupName = "snapshot.kubevirt.io"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add this version to a scheme.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds this version's types, conversions and defaults to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Generated conversion and defaulting functions register themselves in their own init.
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults)
}

// Kinds of the group.
const (
	KindSnapshot        = "VirtualMachineSnapshot"
	KindSnapshotContent = "VirtualMachineSnapshotContent"
	KindRestore         = "VirtualMachineRestore"
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&VirtualMachineSnapshot{}, &VirtualMachineSnapshotList{},
		&VirtualMachineSnapshotContent{}, &VirtualMachineSnapshotContentList{},
		&VirtualMachineRestore{}, &VirtualMachineRestoreList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	for _, kind := range []string{KindSnapshot, KindSnapshotContent, KindRestore} {
		err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(kind), func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace":
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label %q is not supported for %s", label, kind)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
