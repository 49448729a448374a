package openapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Configs returns virt-api's OpenAPI v2 and v3 configurations: the generic server's defaults
// over getDefinitions, with the types of scheme named by Namer, the operations by Operations,
// and the v2 operations of the KubeVirt groups shaped by ShapeV2LikeKubeVirt.
func Configs(getDefinitions common.GetOpenAPIDefinitions, scheme *runtime.Scheme) (*common.Config, *common.OpenAPIV3Config) {
	namer, operations := NewNamer(scheme), NewOperations(scheme)
	v2 := genericapiserver.DefaultOpenAPIConfig(getDefinitions, openapinamer.NewDefinitionNamer(scheme))
	v2.GetDefinitionName = namer.GetDefinitionName
	v2.GetOperationIDAndTags = operations.OperationIDAndTags
	v2.PostProcessSpec = ShapeV2LikeKubeVirt

	v3 := genericapiserver.DefaultOpenAPIV3Config(getDefinitions, openapinamer.NewDefinitionNamer(scheme))
	v3.GetDefinitionName = namer.GetDefinitionName
	v3.GetOperationIDAndTags = operations.OperationIDAndTags
	// The v3 defaults resolve the definitions' references once, through the namer they were
	// given: again, through ours.
	v3.Definitions = getDefinitions(func(goName string) spec.Ref {
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(namer.ModelName(goName)))
	})
	for _, info := range []*spec.Info{v2.Info, v3.Info} {
		info.Title, info.Version = "Hangar", "v1"
	}
	return v2, v3
}
