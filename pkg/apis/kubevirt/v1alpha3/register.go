// Package v1alpha3 serves kubevirt.io/v1alpha3 as a deprecated alias of kubevirt.io/v1: the
// same Go types under a second group version, as KubeVirt registers them, so manifests
// written against v1alpha3 (the VirtualMachine guide's examples) apply unchanged.
package v1alpha3

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: v1.GroupName, Version: "v1alpha3"}

var (
	// SchemeBuilder adds the v1 types under v1alpha3. Conversions and defaults are
	// registered per Go type by v1, so they apply here as well.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds v1alpha3 to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, v1.KnownTypes()...)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return v1.AddFieldLabelConversions(scheme, SchemeGroupVersion)
}
