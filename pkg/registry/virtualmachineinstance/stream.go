package virtualmachineinstance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

var errNoNodes = errors.New("virt-api has no way to reach node agents")

// StreamREST serves an instance's serial console or VNC display: a websocket that virt-api
// proxies, bytes untouched, to the node agent running the instance.
//
// Authorization: the websocket arrives as GET, which RBAC calls "get"; a role that grants
// read access to everything ("get" on "*") must not open consoles, so StreamREST also
// requires "create" on the same subresource, as Kubernetes does for pods/exec.
type StreamREST struct {
	vmis       rest.Getter
	nodes      Nodes
	authorizer authorizer.Authorizer
	// stream is the subresource RBAC sees: console or vnc.
	stream string
	// call is the node agent's call: the stream, or vnc/screenshot.
	call string
	// upgrade says the call is a websocket; a screenshot is a plain GET.
	upgrade bool
	// limits bound the streams open per user and per instance; shared by every stream REST.
	limits *StreamLimits
}

var (
	_ rest.Connecter                = &StreamREST{}
	_ rest.GroupVersionKindProvider = &StreamREST{}
)

// NewStreamREST returns the endpoint of one stream (console or vnc) within limits.
func NewStreamREST(vmis rest.Getter, nodes Nodes, authz authorizer.Authorizer, stream string, limits *StreamLimits) *StreamREST {
	return &StreamREST{vmis: vmis, nodes: nodes, authorizer: authz, stream: stream, call: stream, upgrade: true, limits: limits}
}

// NewScreenshotREST returns the endpoint of vnc/screenshot: one frame of the display as a
// PNG, with the same authorization as the VNC stream, counted as a stream while it is taken.
func NewScreenshotREST(vmis rest.Getter, nodes Nodes, authz authorizer.Authorizer, limits *StreamLimits) *StreamREST {
	return &StreamREST{vmis: vmis, nodes: nodes, authorizer: authz, stream: "vnc", call: "vnc/screenshot", limits: limits}
}

// New returns the type documented as the response: a Status, sent only on errors.
func (r *StreamREST) New() runtime.Object { return &metav1.Status{} }

// Destroy does nothing.
func (r *StreamREST) Destroy() {}

// GroupVersionKind says errors come as core v1 Status objects.
func (r *StreamREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return metav1.SchemeGroupVersion.WithKind("Status")
}

// ConnectMethods: streams are websockets, which open with GET.
func (r *StreamREST) ConnectMethods() []string { return []string{http.MethodGet} }

// NewConnectOptions: a stream takes no options.
func (r *StreamREST) NewConnectOptions() (runtime.Object, bool, string) { return nil, false, "" }

// Connect checks the caller may open the stream and the instance runs, and returns the proxy.
func (r *StreamREST) Connect(ctx context.Context, name string, _ runtime.Object, responder rest.Responder) (http.Handler, error) {
	if err := r.authorizeCreate(ctx, name); err != nil {
		return nil, err
	}
	vmi, err := getInstance(ctx, r.vmis, name)
	if err != nil {
		return nil, err
	}
	if vmi.Status.Phase != kubevirt.Running {
		return nil, apierrors.NewBadRequest(fmt.Sprintf(
			"Unable to connect to VirtualMachineInstance because phase is %s instead of %s", vmi.Status.Phase, kubevirt.Running))
	}
	if r.nodes == nil {
		return nil, nodeError(name, errNoNodes)
	}
	location, err := r.nodes.InstanceURL(ctx, vmi.Status.NodeName, vmi.Namespace, vmi.Name, r.call)
	if err != nil {
		return nil, nodeError(name, err)
	}
	handler := proxy.NewUpgradeAwareHandler(location, r.nodes.Transport(), false, r.upgrade, proxy.NewErrorResponder(responder))
	user, _ := genericapirequest.UserFrom(ctx)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		closed, err := r.limits.open(user.GetName(), vmi.Namespace+"/"+vmi.Name)
		if err != nil {
			responder.Error(err)
			return
		}
		defer closed()
		stripCredentials(req.Header)
		handler.ServeHTTP(writeDeadlines{ResponseWriter: w, timeout: StreamWriteTimeout}, req)
	}), nil
}

// authorizeCreate requires "create" on the stream's subresource in the request's group.
func (r *StreamREST) authorizeCreate(ctx context.Context, name string) error {
	user, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewUnauthorized("no user in the request")
	}
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok {
		return apierrors.NewInternalError(errors.New("no request info"))
	}
	attrs := authorizer.AttributesRecord{
		User: user, Verb: "create", Namespace: info.Namespace, Name: name,
		APIGroup: info.APIGroup, APIVersion: info.APIVersion,
		Resource: "virtualmachineinstances", Subresource: r.stream, ResourceRequest: true,
	}
	decision, reason, err := r.authorizer.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		reason = err.Error()
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: info.APIGroup, Resource: "virtualmachineinstances/" + r.stream}, name,
		fmt.Errorf("opening a %s needs create on virtualmachineinstances/%s: %s", r.stream, r.stream, reason))
}

// stripCredentials keeps the user's credentials from travelling on to the node agent, which
// trusts virt-api's client certificate alone.
func stripCredentials(h http.Header) {
	h.Del("Authorization")
	for key := range h {
		if strings.HasPrefix(key, "Impersonate-") || strings.HasPrefix(key, "X-Remote-") {
			h.Del(key)
		}
	}
	// A browser sends its bearer token as a websocket subprotocol.
	var kept []string
	for _, value := range h.Values("Sec-Websocket-Protocol") {
		for _, p := range strings.Split(value, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, "base64url.bearer.authorization.k8s.io.") {
				kept = append(kept, p)
			}
		}
	}
	h.Del("Sec-Websocket-Protocol")
	if len(kept) > 0 {
		h.Set("Sec-Websocket-Protocol", strings.Join(kept, ", "))
	}
}
