package openapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Configs returns virt-api's OpenAPI v2 and v3 configurations: the generic server's defaults
// over getDefinitions, with the types of scheme named by Namer and the operations by
// OperationIDAndTags.
func Configs(getDefinitions common.GetOpenAPIDefinitions, scheme *runtime.Scheme) (*common.Config, *common.OpenAPIV3Config) {
	namer := NewNamer(scheme)
	v2 := genericapiserver.DefaultOpenAPIConfig(getDefinitions, openapinamer.NewDefinitionNamer(scheme))
	v2.GetDefinitionName = namer.GetDefinitionName
	v2.GetOperationIDAndTags = OperationIDAndTags

	v3 := genericapiserver.DefaultOpenAPIV3Config(getDefinitions, openapinamer.NewDefinitionNamer(scheme))
	v3.GetDefinitionName = namer.GetDefinitionName
	v3.GetOperationIDAndTags = OperationIDAndTags
	// The v3 defaults resolve the definitions' references once, through the namer they were
	// given: again, through ours.
	v3.Definitions = getDefinitions(func(goName string) spec.Ref {
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(ModelName(goName)))
	})
	for _, info := range []*spec.Info{v2.Info, v3.Info} {
		info.Title, info.Version = "Hangar", "v1"
	}
	return v2, v3
}
