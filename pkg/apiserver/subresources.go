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
	}).Operation("v1Version").Doc("the Hangar version, as KubeVirt reports its own"))
	ws.Route(ws.GET("/").To(func(req *restful.Request, resp *restful.Response) {
		responsewriters.WriteObjectNegotiated(Codecs, negotiation.DefaultEndpointRestrictions, schema.GroupVersion{Version: "v1"},
			resp.ResponseWriter, req.Request, http.StatusOK, resourceList, false)
	}).Operation("v1getAPISubResources").Doc("the resources of the group"))
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
// an action is a PUT ("update"), a stream a GET ("get"). The OpenAPI documents bodies and
// answers from the same table (pkg/apiserver/openapi).
func addRoute(ws *restful.WebService, r serving.Resource, subresource string, route *serving.Route) string {
	path := "/namespaces/{namespace}/" + r.Name + "/{name}/" + subresource
	namespace := ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects")
	name := ws.PathParameter("name", "name of the "+r.Kind)
	if route.Action != nil {
		// The same endpoint as the kubevirt.io subresource: one body reader, one answer.
		connecter := action.NewBodiless(route.Action)
		b := ws.PUT(path).To(func(req *restful.Request, resp *restful.Response) { serveConnecter(req, resp, connecter) })
		// Kubernetes marks the kubevirt.io subresources, which it serves as connecters, so.
		ws.Route(b.Operation(route.Operation).Doc(route.Doc).Param(namespace).Param(name).Metadata("x-kubernetes-action", "connect"))
		return "update"
	}
	below := route.Below
	if len(below) == 0 {
		below = []serving.Below{{Operation: route.Operation}}
	}
	for _, p := range below {
		b := ws.GET(path + p.Path).To(func(req *restful.Request, resp *restful.Response) { serveConnecter(req, resp, route.Stream) })
		b = b.Operation(p.Operation).Doc(route.Doc).Param(namespace).Param(name).Metadata("x-kubernetes-action", "connect")
		for _, param := range pathParams(p.Path) {
			b = b.Param(ws.PathParameter(param, "the "+param+" of the "+subresource))
		}
		ws.Route(b)
	}
	return "get"
}

// pathParams are the names of the parameters in a path below a subresource ("/{port}").
func pathParams(path string) []string {
	var names []string
	for _, part := range strings.Split(path, "/") {
		if strings.HasPrefix(part, "{") && strings.HasSuffix(part, "}") {
			names = append(names, part[1:len(part)-1])
		}
	}
	return names
}

// addNamespaceRoute adds the PUT of a namespace-level endpoint (expand-vm-spec).
func addNamespaceRoute(ws *restful.WebService, route serving.NamespaceRoute) {
	ws.Route(ws.PUT("/namespaces/{namespace}/"+route.Name).
		To(func(req *restful.Request, resp *restful.Response) {
			ctx := genericapirequest.WithNamespace(req.Request.Context(), req.PathParameter("namespace"))
			handler, err := route.Handler(ctx, req.Request.Body)
			if err != nil {
				writeError(err, resp, req)
				return
			}
			handler.ServeHTTP(resp.ResponseWriter, req.Request)
		}).
		Operation(route.Operation).Doc(route.Doc).
		Param(ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects")).
		Consumes(restful.MIME_JSON).Produces(restful.MIME_JSON).
		Reads(route.Reads).
		Returns(http.StatusOK, "OK", route.Returns))
}

// serveConnecter serves a go-restful request with a connecter (an action or a stream), with
// the namespace in the context, as the generic handlers do for the kubevirt.io subresources.
func serveConnecter(req *restful.Request, resp *restful.Response, connecter rest.Connecter) {
	ctx := genericapirequest.WithNamespace(req.Request.Context(), req.PathParameter("namespace"))
	ctx = serving.WithPathParams(ctx, req.PathParameters())
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
	}).Operation("v1GetSubAPIGroup").Doc("the group's discovery document"))
	return ws
}
