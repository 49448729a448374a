package openapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// KubeVirt publishes its API as an OpenAPI v2 document only, and clients generated from it
// take each operation's query parameters and typed bodies as that document has them. Its
// create, replace and patch take no query parameters, and its create, replace and delete take
// a JSON (or YAML) body; Kubernetes' builder lists dryRun, fieldManager, fieldValidation and
// pretty for every write and accepts any media type (*/*). A generator gives a method an
// argument for the query parameters, and a typed body only to a JSON body, so the same call
// would not compile against both clients. ShapeV2LikeKubeVirt makes the v2 operations of the
// KubeVirt groups take what KubeVirt's do. The server still honours the query parameters; a
// client sets them as it would any other (a request editor, client-go). The v3 documents,
// which KubeVirt has none of, keep Kubernetes' parameters: kubectl reads v3 to learn whether a
// write takes fieldValidation.

// v2NoQuery are the actions (x-kubernetes-action) whose v2 operations list no query
// parameters in KubeVirt's groups.
var v2NoQuery = map[string]bool{"post": true, "put": true, "patch": true}

// v2JSONBody are the actions whose body is JSON or YAML in KubeVirt's groups.
var v2JSONBody = map[string]bool{"post": true, "put": true, "delete": true}

// ShapeV2LikeKubeVirt gives the create, replace, patch and delete operations of the KubeVirt
// groups in an OpenAPI v2 document the query parameters and body media types KubeVirt's have
// (see above); it is a PostProcessSpec.
func ShapeV2LikeKubeVirt(doc *spec.Swagger) (*spec.Swagger, error) {
	if doc.Paths == nil {
		return doc, nil
	}
	for path, item := range doc.Paths.Paths {
		group, _, _ := splitGroupPath(path)
		if !IsKubeVirtGroup(group) || group == subresourcesGroup {
			continue
		}
		var shared []spec.Parameter
		for _, p := range item.Parameters {
			if isQuery(p, doc) {
				shared = append(shared, p)
			}
		}
		for _, op := range []*spec.Operation{item.Get, item.Put, item.Post, item.Delete, item.Patch} {
			if op == nil {
				continue
			}
			action, _ := op.Extensions.GetString("x-kubernetes-action")
			switch {
			case v2NoQuery[action]:
				var kept []spec.Parameter
				for _, p := range op.Parameters {
					if !isQuery(p, doc) {
						kept = append(kept, p)
					}
				}
				op.Parameters = kept
			case len(shared) > 0:
				// The path's query parameters (pretty) move down to the operations that keep
				// them.
				op.Parameters = append(append([]spec.Parameter{}, shared...), op.Parameters...)
			}
			if v2JSONBody[action] && hasBody(op) {
				op.Consumes = []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML}
			}
		}
		if len(shared) > 0 {
			var kept []spec.Parameter
			for _, p := range item.Parameters {
				if !isQuery(p, doc) {
					kept = append(kept, p)
				}
			}
			item.Parameters = kept
		}
		doc.Paths.Paths[path] = item
	}
	return doc, nil
}

// isQuery says whether p is a query parameter, itself or through a reference to the
// document's shared parameters.
func isQuery(p spec.Parameter, doc *spec.Swagger) bool {
	if ref := p.Ref.String(); ref != "" {
		const prefix = "#/parameters/"
		if len(ref) > len(prefix) && ref[:len(prefix)] == prefix {
			shared, ok := doc.Parameters[ref[len(prefix):]]
			return ok && shared.In == "query"
		}
		return false
	}
	return p.In == "query"
}

func hasBody(op *spec.Operation) bool {
	for _, p := range op.Parameters {
		if p.In == "body" {
			return true
		}
	}
	return false
}
