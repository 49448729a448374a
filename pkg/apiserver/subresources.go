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
	"github.com/hangarvm/hangar/pkg/version"
)

// SubresourcesGroupVersion is KubeVirt's group for imperative actions and streams. Hangar
// serves the same actions as subresources of the kubevirt.io kinds; this group exists so that
// KubeVirt's clients (virtctl, kubecli) work unchanged, with the same paths, verbs and bodies.
var SubresourcesGroupVersion = schema.GroupVersion{Group: "subresources.kubevirt.io", Version: "v1"}

// subresourceStream is one GET of the group: a websocket stream, or (returns set) a JSON
// answer.
type subresourceStream struct {
	resource, subresource string
	kind                  string
	doc                   string
	rest                  rest.Connecter
	returns               interface{}
}

// subresourceAction is one PUT action of the group.
type subresourceAction struct {
	resource, subresource string
	kind                  string
	doc                   string
	options               interface{} // the body's type, for the documentation; nil if none
	act                   action.Func
}

// installSubresourcesGroup serves subresources.kubevirt.io/v1 on go-restful, as KubeVirt
// does, and announces it in both discovery documents. RBAC applies as everywhere: the path
// gives resource, subresource and namespace, PUT is "update", GET is "get".
func installSubresourcesGroup(s *genericapiserver.GenericAPIServer, actions []subresourceAction, streams []subresourceStream) {
	gv := SubresourcesGroupVersion
	ws := new(restful.WebService).Path("/apis/"+gv.String()).
		Doc("KubeVirt's imperative actions on VirtualMachines and their instances").
		Consumes(restful.MIME_JSON, "application/yaml", "*/*").Produces(restful.MIME_JSON)

	resourceList := &metav1.APIResourceList{GroupVersion: gv.String()}
	parents := map[string][]apidiscoveryv2.APISubresourceDiscovery{}
	var parentOrder []string
	for _, a := range actions {
		a := a
		// The same endpoint as the kubevirt.io subresource: one body reader, one answer.
		connecter := action.NewBodiless(a.act)
		route := ws.PUT("/namespaces/{namespace}/"+a.resource+"/{name}/"+a.subresource).
			To(func(req *restful.Request, resp *restful.Response) { serveConnecter(req, resp, connecter) }).
			Operation("replaceSubresourcesNamespaced"+a.kind+capitalize(a.subresource)).
			Doc(a.doc).
			Param(ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects")).
			Param(ws.PathParameter("name", "name of the "+a.resource[:len(a.resource)-1])).
			Returns(http.StatusAccepted, "Accepted; the response has no body", metav1.Status{}).
			Returns(http.StatusConflict, "The action does not apply in the current state", metav1.Status{})
		if a.options != nil {
			route = route.Reads(a.options, "options of the action; optional")
		}
		ws.Route(route)
		resourceList.APIResources = append(resourceList.APIResources, metav1.APIResource{
			Name: a.resource + "/" + a.subresource, Namespaced: true, Verbs: []string{"update"}})
		if _, ok := parents[a.resource]; !ok {
			parentOrder = append(parentOrder, a.resource)
		}
		parents[a.resource] = append(parents[a.resource], apidiscoveryv2.APISubresourceDiscovery{
			Subresource: a.subresource, Verbs: []string{"update"}})
	}
	for _, st := range streams {
		st := st
		route := ws.GET("/namespaces/{namespace}/" + st.resource + "/{name}/" + st.subresource).
			To(func(req *restful.Request, resp *restful.Response) { serveConnecter(req, resp, st.rest) }).
			Operation("connectSubresourcesNamespaced" + st.kind + operationName(st.subresource)).
			Doc(st.doc).
			Param(ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects")).
			Param(ws.PathParameter("name", "name of the "+st.resource[:len(st.resource)-1]))
		if st.returns != nil {
			route = route.Returns(http.StatusOK, "OK", st.returns).
				Returns(http.StatusConflict, "The instance does not run, or its guest agent is not connected", metav1.Status{})
		} else {
			route = route.Returns(http.StatusSwitchingProtocols, "Switching to the websocket", metav1.Status{})
		}
		ws.Route(route)
		resourceList.APIResources = append(resourceList.APIResources, metav1.APIResource{
			Name: st.resource + "/" + st.subresource, Namespaced: true, Verbs: []string{"get"}})
		if _, ok := parents[st.resource]; !ok {
			parentOrder = append(parentOrder, st.resource)
		}
		parents[st.resource] = append(parents[st.resource], apidiscoveryv2.APISubresourceDiscovery{
			Subresource: st.subresource, Verbs: []string{"get"}})
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

	var resources []apidiscoveryv2.APIResourceDiscovery
	for _, parent := range parentOrder {
		// A parent with no verbs of its own carries the actions; clients map the resource
		// itself to kubevirt.io, whose group has the higher priority.
		resources = append(resources, apidiscoveryv2.APIResourceDiscovery{
			Resource: parent, Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{}, Subresources: parents[parent]})
	}
	s.AggregatedDiscoveryGroupManager.AddGroupVersion(gv.Group, apidiscoveryv2.APIVersionDiscovery{
		Version: gv.Version, Resources: resources, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
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

// operationName turns a subresource path (vnc/screenshot) into part of an operation ID.
func operationName(subresource string) string {
	var out string
	for _, part := range strings.Split(subresource, "/") {
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
