package openapi

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/hangarvm/hangar/pkg/registry/serving"
)

// The generic installer documents a connecter (how the kubevirt.io actions and streams are
// served) as a string exchanged for a string, and go-restful's route documentation can say
// neither "no body" nor "websocket". So the operations of the actions and streams are
// documented here, in both groups, from the serving tables that install them, once the
// builders have made each document: the option body KubeVirt defines, the 202 (a Status in
// kubevirt.io, no body in subresources.kubevirt.io, as KubeVirt answers), the errors a client
// should expect, and the websocket upgrade of the streams.

// Group prefixes of the paths, before "/namespaces/{namespace}/<resource>/{name}/<subresource>".
type Prefixes struct {
	// KubeVirt are the served versions of kubevirt.io: /apis/kubevirt.io/v1, ...
	KubeVirt []string
	// Subresources is /apis/subresources.kubevirt.io/v1.
	Subresources string
}

// operation is what the document says of one action or stream operation.
type operation struct {
	description string
	// body is a value of the option body's type; nil: none.
	body     interface{}
	consumes []string
	// success is the code of success, with successModel a value of the type of its JSON body
	// (nil: none) or successMedia the media type of another.
	success      int
	successDoc   string
	successModel interface{}
	successMedia string
	// errors are the 4xx answers a client should handle, each a Status.
	errors     map[int]string
	extensions spec.Extensions
}

// produces is how virt-api encodes a JSON answer (a Status, a guest agent's report).
var produces = []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf}

const noSuchObject = "the object does not exist"

// actionErrors are the refusals of an action: each leaves the object unchanged.
var actionErrors = map[int]string{
	http.StatusBadRequest:          "the options are malformed, or dryRun was asked for in the query rather than in the options",
	http.StatusForbidden:           "admission refuses what the action would do (the launcher pod a start needs, say)",
	http.StatusNotFound:            noSuchObject,
	http.StatusConflict:            "the action does not apply in the object's current state, or another action is under way",
	http.StatusUnprocessableEntity: "what the action would create or change is invalid",
}

// streamErrors are the refusals of a stream or a report from the guest.
var streamErrors = map[int]string{
	http.StatusNotFound: noSuchObject,
	http.StatusConflict: "the instance does not run, or does not offer what is asked for",
}

// Documenter documents the action and stream subresources in the documents a configuration
// builds; its PostProcess methods are the configurations' PostProcessSpec.
type Documenter struct {
	v2 *common.Config
	v3 *common.OpenAPIV3Config
	// operations by path and HTTP method.
	operations map[string]map[string]*operation
	// kinds are the kinds of the objects the paths name.
	kinds map[string]string
}

// Document makes the configurations document the actions and streams of resources.
func Document(v2 *common.Config, v3 *common.OpenAPIV3Config, prefixes Prefixes, resources []serving.Resource) *Documenter {
	d := &Documenter{v2: v2, v3: v3, operations: map[string]map[string]*operation{}, kinds: map[string]string{}}
	for _, r := range resources {
		for _, sub := range r.Subresources {
			route := sub.Subresources
			if route == nil {
				continue
			}
			item := "/namespaces/{namespace}/" + r.Name + "/{name}/" + sub.Name
			if sub.KubeVirt != nil {
				for _, prefix := range prefixes.KubeVirt {
					d.addKubeVirt(prefix+item, sub, route)
					d.kinds[prefix+item] = r.Kind
				}
			}
			d.addSubresources(prefixes.Subresources+item, route)
			d.kinds[prefixes.Subresources+item] = r.Kind
		}
	}
	v2.PostProcessSpec = chain(v2.PostProcessSpec, d.PostProcessV2)
	v3.PostProcessSpec = chain(v3.PostProcessSpec, d.PostProcessV3)
	return d
}

// chain runs first (if any), then next.
func chain[T any](first, next func(T) (T, error)) func(T) (T, error) {
	if first == nil {
		return next
	}
	return func(doc T) (T, error) {
		doc, err := first(doc)
		if err != nil {
			return doc, err
		}
		return next(doc)
	}
}

// addKubeVirt documents a subresource as kubevirt.io serves it: an action answers a Status.
func (d *Documenter) addKubeVirt(path string, sub serving.Subresource, route *serving.Route) {
	switch {
	case route.Action != nil:
		op := &operation{description: route.Doc, body: sub.Options, consumes: bodyMediaTypes(sub.Options),
			success: http.StatusAccepted, successDoc: "Accepted: the action is under way",
			successModel: metav1.Status{}, errors: actionErrors}
		d.operations[path] = map[string]*operation{"put": op, "post": op}
	case route.Websocket:
		d.operations[path] = map[string]*operation{"get": websocket(route.Doc)}
	}
}

// addSubresources documents a route of subresources.kubevirt.io, as KubeVirt serves it: an
// action answers 202 with no body.
func (d *Documenter) addSubresources(path string, route *serving.Route) {
	var op *operation
	switch {
	case route.Action != nil:
		op = &operation{description: route.Doc, body: route.Options, consumes: bodyMediaTypes(route.Options),
			success: http.StatusAccepted, successDoc: "Accepted: the action is under way; no body, as KubeVirt answers",
			errors: actionErrors}
		d.operations[path] = map[string]*operation{"put": op}
		return
	case route.Websocket:
		op = websocket(route.Doc)
	case route.Returns != nil:
		op = &operation{description: route.Doc, success: http.StatusOK, successDoc: "OK", successModel: route.Returns, errors: streamErrors}
	default:
		op = &operation{description: route.Doc, success: http.StatusOK, successDoc: "OK", successMedia: route.ContentType, errors: streamErrors}
	}
	d.operations[path] = map[string]*operation{"get": op}
}

func websocket(doc string) *operation {
	return &operation{description: doc + ". The GET must ask for a websocket upgrade with subprotocol " +
		serving.WebsocketSubprotocol + "; the guest's bytes travel as they are in binary messages.",
		success: http.StatusSwitchingProtocols, successDoc: "Switching Protocols: the connection is a websocket (subprotocol " +
			serving.WebsocketSubprotocol + ")",
		errors:     map[int]string{http.StatusBadRequest: "not a websocket upgrade", http.StatusNotFound: noSuchObject, http.StatusConflict: streamErrors[http.StatusConflict]},
		extensions: spec.Extensions{"x-websocket-subprotocols": []interface{}{serving.WebsocketSubprotocol}}}
}

// bodyMediaTypes are what an option body may be sent as: JSON or YAML, and protobuf for the
// option kinds of kubevirt.io/v1.
func bodyMediaTypes(body interface{}) []string {
	if body == nil {
		return nil
	}
	if _, ok := reflect.New(reflect.TypeOf(body)).Interface().(runtime.Object); ok {
		return produces
	}
	return []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML}
}

// models lists the Go types of the JSON bodies of ops, for the definitions they need.
func models(ops []*operation) []string {
	seen := map[string]bool{util.GetCanonicalTypeName(metav1.Status{}): true}
	for _, op := range ops {
		for _, m := range []interface{}{op.body, op.successModel} {
			if m != nil {
				seen[util.GetCanonicalTypeName(m)] = true
			}
		}
	}
	var names []string
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func ref(prefix string, getName func(string) (string, spec.Extensions), model interface{}) spec.Ref {
	name, _ := getName(util.GetCanonicalTypeName(model))
	return spec.MustCreateRef(prefix + common.EscapeJsonPointer(name))
}

// PostProcessV2 documents the actions and streams found in an OpenAPI v2 document.
func (d *Documenter) PostProcessV2(doc *spec.Swagger) (*spec.Swagger, error) {
	if doc.Paths == nil {
		return doc, nil
	}
	statusRef := ref("#/definitions/", d.v2.GetDefinitionName, metav1.Status{})
	var documented []*operation
	for path, methods := range d.operations {
		item, ok := doc.Paths.Paths[path]
		if !ok {
			continue
		}
		for method, op := range methods {
			target := v2Operation(&item, method)
			if target == nil {
				continue
			}
			documented = append(documented, op)
			target.Description = op.description
			for k, v := range op.extensions {
				target.AddExtension(k, v)
			}
			var params []spec.Parameter
			for _, p := range target.Parameters {
				if p.In != "body" {
					params = append(params, p)
				}
			}
			if op.body != nil {
				params = append(params, spec.Parameter{ParamProps: spec.ParamProps{Name: "body", In: "body",
					Description: "the options; all are optional, and so is the body",
					Schema:      &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref("#/definitions/", d.v2.GetDefinitionName, op.body)}}}})
				target.Consumes = op.consumes
			}
			target.Parameters = params
			responses := map[int]spec.Response{}
			if old := target.Responses; old != nil {
				if unauthorized, ok := old.StatusCodeResponses[http.StatusUnauthorized]; ok {
					responses[http.StatusUnauthorized] = unauthorized
				}
			}
			success := spec.Response{ResponseProps: spec.ResponseProps{Description: op.successDoc}}
			switch {
			case op.successModel != nil:
				success.Schema = &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref("#/definitions/", d.v2.GetDefinitionName, op.successModel)}}
				target.Produces = produces
			case op.successMedia != "":
				success.Schema = &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"file"}}}
				target.Produces = []string{op.successMedia, runtime.ContentTypeJSON}
			default:
				target.Produces = []string{runtime.ContentTypeJSON}
			}
			responses[op.success] = success
			for code, description := range op.errors {
				responses[code] = spec.Response{ResponseProps: spec.ResponseProps{Description: description,
					Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: statusRef}}}}
			}
			target.Responses = &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: responses}}
		}
		nameTheParent(item.Parameters, d.kinds[path])
		doc.Paths.Paths[path] = item
	}
	if len(documented) == 0 {
		return doc, nil
	}
	defs, err := builder.BuildOpenAPIDefinitionsForResources(d.v2, models(documented)...)
	if err != nil {
		return nil, fmt.Errorf("build the definitions of the subresources' bodies: %w", err)
	}
	if doc.Definitions == nil {
		doc.Definitions = spec.Definitions{}
	}
	for name, schema := range defs.Definitions {
		if _, ok := doc.Definitions[name]; !ok {
			doc.Definitions[name] = schema
		}
	}
	return doc, nil
}

func v2Operation(item *spec.PathItem, method string) *spec.Operation {
	switch method {
	case "get":
		return item.Get
	case "put":
		return item.Put
	case "post":
		return item.Post
	}
	return nil
}

// PostProcessV3 documents the actions and streams found in an OpenAPI v3 document.
func (d *Documenter) PostProcessV3(doc *spec3.OpenAPI) (*spec3.OpenAPI, error) {
	if doc.Paths == nil {
		return doc, nil
	}
	const prefix = "#/components/schemas/"
	statusSchema := &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(prefix, d.v3.GetDefinitionName, metav1.Status{})}}
	content := func(schema *spec.Schema, mediaTypes []string) map[string]*spec3.MediaType {
		m := map[string]*spec3.MediaType{}
		for _, t := range mediaTypes {
			m[t] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: schema}}
		}
		return m
	}
	var documented []*operation
	for path, methods := range d.operations {
		item, ok := doc.Paths.Paths[path]
		if !ok {
			continue
		}
		for method, op := range methods {
			target := v3Operation(item, method)
			if target == nil {
				continue
			}
			documented = append(documented, op)
			target.Description = op.description
			for k, v := range op.extensions {
				target.AddExtension(k, v)
			}
			target.RequestBody = nil
			if op.body != nil {
				schema := &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(prefix, d.v3.GetDefinitionName, op.body)}}
				target.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{
					Description: "the options; all are optional, and so is the body", Content: content(schema, op.consumes)}}
			}
			responses := map[int]*spec3.Response{}
			if old := target.Responses; old != nil {
				if unauthorized, ok := old.StatusCodeResponses[http.StatusUnauthorized]; ok {
					responses[http.StatusUnauthorized] = unauthorized
				}
			}
			success := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: op.successDoc}}
			switch {
			case op.successModel != nil:
				schema := &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(prefix, d.v3.GetDefinitionName, op.successModel)}}
				success.Content = content(schema, produces)
			case op.successMedia != "":
				success.Content = content(&spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Format: "binary"}},
					[]string{op.successMedia})
			}
			responses[op.success] = success
			for code, description := range op.errors {
				responses[code] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: description,
					Content: content(statusSchema, []string{runtime.ContentTypeJSON})}}
			}
			target.Responses = &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: responses}}
		}
		nameTheParentV3(item.Parameters, d.kinds[path])
	}
	if len(documented) == 0 {
		return doc, nil
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(d.v3, models(documented)...)
	if err != nil {
		return nil, fmt.Errorf("build the schemas of the subresources' bodies: %w", err)
	}
	if doc.Components == nil {
		doc.Components = &spec3.Components{}
	}
	if doc.Components.Schemas == nil {
		doc.Components.Schemas = map[string]*spec.Schema{}
	}
	for name, schema := range schemas {
		if _, ok := doc.Components.Schemas[name]; !ok {
			doc.Components.Schemas[name] = schema
		}
	}
	return doc, nil
}

func v3Operation(item *spec3.Path, method string) *spec3.Operation {
	switch method {
	case "get":
		return item.Get
	case "put":
		return item.Put
	case "post":
		return item.Post
	}
	return nil
}

// nameTheParent describes {name} as the name of the object the subresource belongs to; the
// generic installer describes it as the name of its connecter's kind (a Status).
func nameTheParent(params []spec.Parameter, kind string) {
	for i := range params {
		if params[i].In == "path" && params[i].Name == "name" {
			params[i].Description = "name of the " + kind
		}
	}
}

func nameTheParentV3(params []*spec3.Parameter, kind string) {
	for i, p := range params {
		if p != nil && p.In == "path" && p.Name == "name" {
			// The builder may share a parameter between paths: change a copy.
			named := *p
			named.Description = "name of the " + kind
			params[i] = &named
		}
	}
}
