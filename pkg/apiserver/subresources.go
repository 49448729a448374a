package apiserver

import (
	"net/http"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/hangarvm/hangar/pkg/registry/action"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/version"
)

// SubresourcesGroupVersion is KubeVirt's group for imperative actions and streams. Hangar
// serves the same actions as subresources of the kubevirt.io kinds; this group exists so that
// KubeVirt's clients (virtctl, kubecli) work unchanged, with the same paths, verbs and bodies.
var SubresourcesGroupVersion = schema.GroupVersion{Group: "subresources.kubevirt.io", Version: "v1"}

// installSubresourcesGroup serves subresources.kubevirt.io/v1 on go-restful, as KubeVirt
// does, and announces it in both discovery documents. RBAC applies as everywhere: the path
// gives resource, subresource and namespace, PUT is "update", GET is "get".
func installSubresourcesGroup(s *genericapiserver.GenericAPIServer, resources []serving.Resource, namespaceRoutes []serving.NamespaceRoute) {
	gv := SubresourcesGroupVersion
	ws := new(restful.WebService).Path("/apis/"+gv.String()).
		Doc("KubeVirt's imperative actions on VirtualMachines and their instances").
		Consumes(restful.MIME_JSON, "application/yaml", "*/*").Produces(restful.MIME_JSON)

	resourceList := &metav1.APIResourceList{GroupVersion: gv.String()}
	parents := map[string][]apidiscoveryv2.APISubresourceDiscovery{}
	var parentOrder []string
	for _, r := range resources {
		for _, sub := range r.Subresources {
			if sub.Subresources == nil {
				continue
			}
			verb := addRoute(ws, r, sub.Name, sub.Subresources)
			resourceList.APIResources = append(resourceList.APIResources, metav1.APIResource{
				Name: r.Name + "/" + sub.Name, Namespaced: true, Verbs: []string{verb}})
			if _, ok := parents[r.Name]; !ok {
				parentOrder = append(parentOrder, r.Name)
			}
			parents[r.Name] = append(parents[r.Name], apidiscoveryv2.APISubresourceDiscovery{
				Subresource: sub.Name, Verbs: []string{verb}})
		}
	}
	for _, route := range namespaceRoutes {
		addNamespaceRoute(ws, route)
		resourceList.APIResources = append(resourceList.APIResources, metav1.APIResource{
			Name: route.Name, Namespaced: true, Verbs: []string{"update"}})
	}
	ws.Route(ws.GET("/version").To(func(_ *restful.Request, resp *restful.Response) {
		_ = resp.WriteAsJson(version.Get())
	}).Operation("getVersion").Doc("the Hangar version, as KubeVirt reports its own"))
	ws.Route(ws.GET("/").To(func(req *restful.Request, resp *restful.Response) {
		responsewriters.WriteObjectNegotiated(Codecs, negotiation.DefaultEndpointRestrictions, schema.GroupVersion{Version: "v1"},
			resp.ResponseWriter, req.Request, http.StatusOK, resourceList, false)
	}).Operation("getSubresourcesAPIResources").Doc("the resources of the group"))
	s.Handler.GoRestfulContainer.Add(ws)

	group := metav1.APIGroup{
		Name:             gv.Group,
		Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: gv.String(), Version: gv.Version}},
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version},
	}
	s.DiscoveryGroupManager.AddGroup(group)
	s.Handler.GoRestfulContainer.Add(newGroupWebService(group))

	var discovered []apidiscoveryv2.APIResourceDiscovery
	for _, route := range namespaceRoutes {
		discovered = append(discovered, apidiscoveryv2.APIResourceDiscovery{
			Resource: route.Name, Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{"update"}})
	}
	for _, parent := range parentOrder {
		// A parent with no verbs of its own carries the actions; clients map the resource
		// itself to kubevirt.io, whose group has the higher priority.
		discovered = append(discovered, apidiscoveryv2.APIResourceDiscovery{
			Resource: parent, Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{}, Subresources: parents[parent]})
	}
	s.AggregatedDiscoveryGroupManager.AddGroupVersion(gv.Group, apidiscoveryv2.APIVersionDiscovery{
		Version: gv.Version, Resources: discovered, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
}

// addRoute adds the route of one subresource to ws and returns its verb as RBAC sees it:
// an action is a PUT ("update"), a stream a GET ("get").
func addRoute(ws *restful.WebService, r serving.Resource, subresource string, route *serving.Route) string {
	path := "/namespaces/{namespace}/" + r.Name + "/{name}/" + subresource
	namespace := ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects")
	name := ws.PathParameter("name", "name of the "+r.Name[:len(r.Name)-1])
	if route.Action != nil {
		// The same endpoint as the kubevirt.io subresource: one body reader, one answer.
		connecter := action.NewBodiless(route.Action)
		b := ws.PUT(path).
			To(func(req *restful.Request, resp *restful.Response) { serveConnecter(req, resp, connecter) }).
			Operation("replaceSubresourcesNamespaced"+r.Kind+capitalize(subresource)).
			Doc(route.Doc).Param(namespace).Param(name).
			Returns(http.StatusAccepted, "Accepted; the response has no body", metav1.Status{}).
			Returns(http.StatusConflict, "The action does not apply in the current state", metav1.Status{})
		if route.Options != nil {
			b = b.Reads(route.Options, "options of the action; optional")
		}
		ws.Route(b)
		return "update"
	}
	b := ws.GET(path).
		To(func(req *restful.Request, resp *restful.Response) { serveConnecter(req, resp, route.Stream) }).
		Operation("connectSubresourcesNamespaced" + r.Kind + operationName(subresource)).
		Doc(route.Doc).Param(namespace).Param(name)
	if route.Returns != nil {
		b = b.Returns(http.StatusOK, "OK", route.Returns).
			Returns(http.StatusConflict, "The instance does not run, or its guest agent is not connected", metav1.Status{})
	} else {
		b = b.Returns(http.StatusSwitchingProtocols, "Switching to the websocket", metav1.Status{})
	}
	ws.Route(b)
	return "get"
}

// addNamespaceRoute adds the PUT of a namespace-level endpoint.
func addNamespaceRoute(ws *restful.WebService, route serving.NamespaceRoute) {
	b := ws.PUT("/namespaces/{namespace}/"+route.Name).
		To(func(req *restful.Request, resp *restful.Response) {
			ctx := genericapirequest.WithNamespace(req.Request.Context(), req.PathParameter("namespace"))
			handler, err := route.Handler(ctx, req.Request.Body)
			if err != nil {
				writeError(err, resp, req)
				return
			}
			handler.ServeHTTP(resp.ResponseWriter, req.Request)
		}).
		Operation("replaceSubresourcesNamespaced"+operationName(route.Name)).
		Doc(route.Doc).
		Param(ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects")).
		Reads(route.Reads).
		Returns(http.StatusOK, "OK", route.Returns)
	ws.Route(b)
}

// serveConnecter serves a go-restful request with a connecter (an action or a stream), with
// the namespace in the context, as the generic handlers do for the kubevirt.io subresources.
func serveConnecter(req *restful.Request, resp *restful.Response, connecter rest.Connecter) {
	ctx := genericapirequest.WithNamespace(req.Request.Context(), req.PathParameter("namespace"))
	responder := &restfulResponder{req: req, resp: resp}
	handler, err := connecter.Connect(ctx, req.PathParameter("name"), nil, responder)
	if err != nil {
		writeError(err, resp, req)
		return
	}
	handler.ServeHTTP(resp.ResponseWriter, req.Request)
}

// restfulResponder answers for a connecter on a go-restful route.
type restfulResponder struct {
	req  *restful.Request
	resp *restful.Response
}

func (r *restfulResponder) Object(statusCode int, obj runtime.Object) {
	responsewriters.WriteObjectNegotiated(Codecs, negotiation.DefaultEndpointRestrictions, SubresourcesGroupVersion,
		r.resp.ResponseWriter, r.req.Request, statusCode, obj, false)
}

func (r *restfulResponder) Error(err error) { writeError(err, r.resp, r.req) }

func writeError(err error, resp *restful.Response, req *restful.Request) {
	responsewriters.ErrorNegotiated(err, Codecs, SubresourcesGroupVersion, resp.ResponseWriter, req.Request)
}

// newGroupWebService serves GET /apis/<group> with the group's discovery document.
func newGroupWebService(group metav1.APIGroup) *restful.WebService {
	ws := new(restful.WebService).Path("/apis/" + group.Name).Produces(restful.MIME_JSON)
	ws.Route(ws.GET("/").To(func(req *restful.Request, resp *restful.Response) {
		responsewriters.WriteObjectNegotiated(Codecs, negotiation.DefaultEndpointRestrictions, schema.GroupVersion{Version: "v1"},
			resp.ResponseWriter, req.Request, http.StatusOK, &group, false)
	}).Operation("getSubresourcesAPIGroup").Doc("the group's discovery document"))
	return ws
}

// operationName turns a subresource path (vnc/screenshot, expand-vm-spec) into part of an
// operation ID.
func operationName(subresource string) string {
	var out string
	for _, part := range strings.FieldsFunc(subresource, func(r rune) bool { return r == '/' || r == '-' }) {
		out += capitalize(part)
	}
	return out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
