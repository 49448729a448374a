//go:build bench

package bench

import (
	"fmt"
	"strings"
)

// crdSchema turns a kind's OpenAPI v3 schema, as virt-api publishes it, into the structural
// schema a CustomResourceDefinition needs: references inlined, quantities as int-or-string,
// object metadata left to the API server.
func crdSchema(components map[string]map[string]interface{}, kind string) (map[string]interface{}, error) {
	root, ok := components[kind]
	if !ok {
		return nil, fmt.Errorf("no schema %s", kind)
	}
	schema := inline(root, components, 0)
	props, _ := schema["properties"].(map[string]interface{})
	for _, top := range []string{"apiVersion", "kind", "metadata"} {
		delete(props, top)
	}
	delete(schema, "required")
	return schema, nil
}

// inline resolves $ref and allOf-of-one-$ref recursively and normalises what CRDs refuse.
func inline(node map[string]interface{}, components map[string]map[string]interface{}, depth int) map[string]interface{} {
	if depth > 40 {
		return map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
	out := map[string]interface{}{}
	if ref, ok := node["$ref"].(string); ok {
		return resolve(ref, components, depth)
	}
	if all, ok := node["allOf"].([]interface{}); ok && len(all) == 1 {
		if ref, ok := all[0].(map[string]interface{})["$ref"].(string); ok {
			out = resolve(ref, components, depth)
		}
	}
	if oneOf, ok := node["oneOf"].([]interface{}); ok && len(oneOf) == 2 {
		// resource.Quantity: a string or a number.
		return map[string]interface{}{"x-kubernetes-int-or-string": true,
			"anyOf": []interface{}{map[string]interface{}{"type": "integer"}, map[string]interface{}{"type": "string"}}}
	}
	for key, value := range node {
		switch key {
		case "allOf", "$ref", "default", "x-kubernetes-group-version-kind", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key":
		case "properties":
			props := map[string]interface{}{}
			for name, p := range value.(map[string]interface{}) {
				props[name] = inline(p.(map[string]interface{}), components, depth+1)
			}
			out["properties"] = props
		case "items", "additionalProperties":
			if m, ok := value.(map[string]interface{}); ok {
				out[key] = inline(m, components, depth+1)
			}
		default:
			out[key] = value
		}
	}
	return out
}

func resolve(ref string, components map[string]map[string]interface{}, depth int) map[string]interface{} {
	name := strings.TrimPrefix(ref, "#/components/schemas/")
	if strings.HasSuffix(name, "meta.v1.ObjectMeta") {
		// The template's metadata: kept as written, as CRDs do with embedded metadata.
		return map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
	target, ok := components[name]
	if !ok {
		return map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
	return inline(target, components, depth+1)
}
