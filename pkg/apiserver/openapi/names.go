// Package openapi makes virt-api's OpenAPI documents interchangeable with KubeVirt's for the
// clients generated from them: KubeVirt's model names and operation IDs, the shape of the v2
// operations of KubeVirt's groups, and the request bodies and answers of the action and stream
// subresources, which the generic installer documents as opaque strings.
//
// All of it is driven by API group, not by kind: a KubeVirt group (kubevirt.io or
// *.kubevirt.io) added to virt-api's scheme and served is named as KubeVirt names it.
package openapi

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// cdiTypesPackage is Hangar's copy of CDI's DataVolume spec. cdi.kubevirt.io is not served by
// virt-api, so not in its scheme, but KubeVirt's OpenAPI has CDI's types as v1beta1.<Type>
// (v1beta1.DataVolumeSpec), as KubeVirt's Go package names them.
const cdiTypesPackage = "github.com/hangarvm/hangar/pkg/apis/cdi/v1beta1"

// Namer names the models as KubeVirt's OpenAPI does, for the OpenAPI configuration's
// GetDefinitionName, which every definition and reference of both documents goes through (as
// does the type converter of server-side apply). It keeps the x-kubernetes-group-version-kind
// extensions of the generic server's namer: server-side apply and kubectl explain find the
// kinds by them, not by name.
type Namer struct {
	kinds  *openapinamer.DefinitionNamer
	groups kubeVirtGroups
}

// NewNamer returns the namer of the types of schemes.
func NewNamer(schemes ...*runtime.Scheme) *Namer {
	return &Namer{kinds: openapinamer.NewDefinitionNamer(schemes...), groups: newKubeVirtGroups(schemes...)}
}

// ModelName is the OpenAPI model name of the Go type goName ("<import path>.<Type>") as
// KubeVirt's OpenAPI names it: the types of a KubeVirt group's package by version and type
// (v1.VirtualMachine, v1beta1.VirtualMachineInstancetype), every other type by its import path
// in dots (k8s.io.api.core.v1.Affinity, k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta).
// Generated clients name their types after these, so a client generated from either document
// has the same types.
func (n *Namer) ModelName(goName string) string {
	dot := strings.LastIndex(goName, ".")
	if dot < 0 {
		return goName
	}
	pkg, typ := goName[:dot], goName[dot+1:]
	if version, ok := n.groups.packageVersion[pkg]; ok {
		return version + "." + typ
	}
	if pkg == cdiTypesPackage {
		return "v1beta1." + typ
	}
	return strings.ReplaceAll(pkg, "/", ".") + "." + typ
}

// GetDefinitionName returns the model name of the Go type goName and its extensions.
func (n *Namer) GetDefinitionName(goName string) (string, spec.Extensions) {
	_, extensions := n.kinds.GetDefinitionName(goName)
	return n.ModelName(goName), extensions
}
