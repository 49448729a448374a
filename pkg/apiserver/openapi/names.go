// Package openapi makes virt-api's OpenAPI documents interchangeable with KubeVirt's for the
// clients generated from them: KubeVirt's model names and operation IDs, and the request
// bodies and answers of the action and stream subresources, which the generic installer
// documents as opaque strings.
package openapi

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// kubevirtV1Package is the Go package of kubevirt.io/v1.
var kubevirtV1Package = reflect.TypeOf(v1.VirtualMachine{}).PkgPath()

// ModelName is the OpenAPI model name of the Go type goName ("<import path>.<Type>") as
// KubeVirt's OpenAPI names it: kubevirt.io/v1's types by version and type (v1.VirtualMachine),
// every other type by its import path in dots (k8s.io.api.core.v1.Affinity,
// k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta). Generated clients name their types after
// these, so a client generated from either document has the same types. Only one package
// gets a short name, so no two types share one.
func ModelName(goName string) string {
	dot := strings.LastIndex(goName, ".")
	if dot < 0 {
		return goName
	}
	pkg, typ := goName[:dot], goName[dot+1:]
	if pkg == kubevirtV1Package {
		return "v1." + typ
	}
	return strings.ReplaceAll(pkg, "/", ".") + "." + typ
}

// Namer names the models as ModelName does, for the OpenAPI configuration's
// GetDefinitionName, which every definition and reference of both documents goes through (as
// does the type converter of server-side apply). It keeps the x-kubernetes-group-version-kind
// extensions of the generic server's namer: server-side apply and kubectl explain find the
// kinds by them, not by name.
type Namer struct {
	kinds *openapinamer.DefinitionNamer
}

// NewNamer returns the namer of the types of schemes.
func NewNamer(schemes ...*runtime.Scheme) *Namer {
	return &Namer{kinds: openapinamer.NewDefinitionNamer(schemes...)}
}

// GetDefinitionName returns the model name of the Go type goName and its extensions.
func (n *Namer) GetDefinitionName(goName string) (string, spec.Extensions) {
	_, extensions := n.kinds.GetDefinitionName(goName)
	return ModelName(goName), extensions
}
