// Package serving describes what one resource serves in virt-api's two groups, listed once by
// the resource's registry package (as Kubernetes' pod registry lists its subresources in
// PodStorage): the resource and its subresources in kubevirt.io, and KubeVirt's imperative
// actions and streams under subresources.kubevirt.io, with the paths, verbs and bodies
// KubeVirt's clients use. pkg/apiserver installs both groups from these tables.
package serving

import (
	"context"
	"io"
	"net/http"

	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/registry/action"
)

// Resource is a resource and its subresources.
type Resource struct {
	// Name is the resource's plural ("virtualmachines"); Kind its kind.
	Name, Kind string
	// Storage serves the resource itself in kubevirt.io.
	Storage      rest.Storage
	Subresources []Subresource
}

// Subresource is one subresource of a resource, in either group or both.
type Subresource struct {
	// Name is the path below an object: "status", "start", "vnc/screenshot".
	Name string
	// KubeVirt serves it in kubevirt.io; nil when only subresources.kubevirt.io has it.
	KubeVirt rest.Storage
	// Options is the option body of an action KubeVirt serves in kubevirt.io (the generated
	// clientset sends it); nil for other subresources. The OpenAPI documents it: the
	// generic installer knows no body for a connecter.
	Options interface{}
	// Subresources is its route under subresources.kubevirt.io; nil when that group has it not.
	Subresources *Route
}

// Route is an endpoint of subresources.kubevirt.io: a PUT that carries out Action (the
// answer is 202 with no body, as KubeVirt's), or a GET that Stream serves (a websocket, a
// JSON answer of type Returns, or an answer of media type ContentType).
type Route struct {
	// Doc documents the route in the OpenAPI document; Operation is its operation ID there,
	// KubeVirt's (v1Start), so that clients generated from either OpenAPI have the same
	// methods.
	Doc, Operation string
	// Action and the type of its option body (nil: none) make a PUT route.
	Action  action.Func
	Options interface{}
	// Stream makes a GET route; it answers as one of the three fields below says.
	Stream rest.Connecter
	// Websocket: Stream upgrades the connection to a websocket, subprotocol plain.kubevirt.io,
	// in both groups.
	Websocket   bool
	Returns     interface{}
	ContentType string
	// Below, when set, replaces the subresource's own path by paths below it with path
	// parameters ("/{port}", "/{port}/{protocol}"), each with its operation ID; the stream
	// reads the parameters with PathParam. RBAC and discovery see the subresource alone.
	Below []Below
}

// Below is a path below a subresource and its operation ID.
type Below struct {
	Path, Operation string
}

type pathParamsKey struct{}

// WithPathParams returns ctx carrying a route's path parameters for its stream.
func WithPathParams(ctx context.Context, params map[string]string) context.Context {
	return context.WithValue(ctx, pathParamsKey{}, params)
}

// PathParam is the path parameter name of the request ctx belongs to ("" when absent).
func PathParam(ctx context.Context, name string) string {
	params, _ := ctx.Value(pathParamsKey{}).(map[string]string)
	return params[name]
}

// Action is a subresource served in both groups that carries out act: a PUT or POST in
// kubevirt.io (answering a Status), a PUT in subresources.kubevirt.io, both taking options.
func Action(name, operation string, act action.Func, options interface{}, doc string) Subresource {
	return Subresource{Name: name, KubeVirt: action.New(act), Options: options,
		Subresources: &Route{Doc: doc, Operation: operation, Action: act, Options: options}}
}

// Websocket is a stream served in both groups: a GET that upgrades to a websocket.
func Websocket(name, operation string, stream interface {
	rest.Storage
	rest.Connecter
}, doc string) Subresource {
	return Subresource{Name: name, KubeVirt: stream,
		Subresources: &Route{Doc: doc, Operation: operation, Stream: stream, Websocket: true}}
}

// WebsocketSubprotocol is the websocket subprotocol of the streams, KubeVirt's: the guest's
// serial console or VNC bytes as they are.
const WebsocketSubprotocol = "plain.kubevirt.io"

// Storage is the storage map of kubevirt.io for resources: each resource and each of its
// subresources that the group serves, under "<resource>" and "<resource>/<subresource>".
func Storage(resources ...Resource) map[string]rest.Storage {
	m := map[string]rest.Storage{}
	for _, r := range resources {
		m[r.Name] = r.Storage
		for _, s := range r.Subresources {
			if s.KubeVirt != nil {
				m[r.Name+"/"+s.Name] = s.KubeVirt
			}
		}
	}
	return m
}

// NamespaceRoute is an endpoint of subresources.kubevirt.io on a namespace rather than on an
// object: a PUT of a body to /namespaces/<namespace>/<Name> (KubeVirt's expand-vm-spec),
// authorized as "update" of the resource <Name>.
type NamespaceRoute struct {
	// Doc documents it; Operation is its operation ID, KubeVirt's (v1ExpandSpec).
	Name, Doc, Operation string
	// Handler answers the request whose body is body, the namespace in ctx.
	Handler func(ctx context.Context, body io.Reader) (http.Handler, error)
	// Reads and Returns are the types of the body and of the answer, for the OpenAPI document.
	Reads, Returns interface{}
}
