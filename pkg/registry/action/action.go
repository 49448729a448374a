// Package action holds what the imperative subresources (start, stop, restart, pause, ...)
// share: a Connecter that takes KubeVirt's option bodies (or their protobuf form) on PUT or POST and answers 202
// Accepted on success: with a Status on the kubevirt.io subresources, so that the generated
// typed clients have something to decode, and with no body under subresources.kubevirt.io,
// exactly as KubeVirt does.
package action

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/registry/rest"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// MaxBodyBytes bounds an option body; real ones are a few dozen bytes.
const MaxBodyBytes = 64 << 10

// Func carries out an action on the named object; body is the option body (maybe empty).
// It returns an API error (409, 400, 404, ...) when the action cannot be done.
type Func func(ctx context.Context, name string, body Body) error

// Body is an action's option body as it came: JSON or YAML from KubeVirt's clients and
// kubectl, protobuf from the generated clientset, which prefers it.
type Body struct {
	// Data is the raw body; empty when the client sent none.
	Data []byte
	// MediaType is the body's Content-Type without parameters.
	MediaType string
}

// REST serves one action as a subresource: PUT (KubeVirt's verb) and POST.
type REST struct {
	act Func
	// bodiless answers success with no body, as KubeVirt's own endpoints do.
	bodiless bool
}

var (
	_ rest.Connecter                = &REST{}
	_ rest.GroupVersionKindProvider = &REST{}
)

// New returns the REST endpoint of an action; success is a Status with code 202.
func New(act Func) *REST { return &REST{act: act} }

// NewBodiless returns the endpoint as KubeVirt serves it: success is 202 with no body.
func NewBodiless(act Func) *REST { return &REST{act: act, bodiless: true} }

// New returns the type documented as the response: a Status.
func (r *REST) New() runtime.Object { return &metav1.Status{} }

// Destroy does nothing: actions own no storage.
func (r *REST) Destroy() {}

// GroupVersionKind says the endpoint answers with core v1 Status objects.
func (r *REST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return metav1.SchemeGroupVersion.WithKind("Status")
}

// ConnectMethods are the verbs of an action: PUT as KubeVirt's clients send, POST as
// kubectl-style tooling does. RBAC sees them as update and create.
func (r *REST) ConnectMethods() []string { return []string{http.MethodPut, http.MethodPost} }

// NewConnectOptions says the action takes no query parameters: options come in the body.
func (r *REST) NewConnectOptions() (runtime.Object, bool, string) { return nil, false, "" }

// Connect returns the handler that carries out the action for one request.
func (r *REST) Connect(ctx context.Context, name string, _ runtime.Object, responder rest.Responder) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, MaxBodyBytes+1))
		if err != nil {
			responder.Error(apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err)))
			return
		}
		if len(body) > MaxBodyBytes {
			responder.Error(apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", MaxBodyBytes)))
			return
		}
		if _, ok := req.URL.Query()["dryRun"]; ok {
			// The generic handler refuses it on the kubevirt.io paths before we get here; the
			// subresources group refuses it too rather than act for real.
			responder.Error(apierrors.NewBadRequest("dryRun is not supported in the query; set dryRun in the request body"))
			return
		}
		mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		if err := r.act(ctx, name, Body{Data: body, MediaType: mediaType}); err != nil {
			responder.Error(err)
			return
		}
		if r.bodiless {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		responder.Object(http.StatusAccepted, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusAccepted})
	}), nil
}

// optionsCodecs decodes the protobuf form of the option types, which only kubevirt.io/v1 has.
var optionsCodecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme)
}()

// DecodeJSON reads a JSON or YAML body into v, a body that is no API object (KubeVirt's
// memory dump request); unknown fields are ignored, an empty body leaves v as it is.
func (b Body) DecodeJSON(v any) error {
	if len(b.Data) == 0 {
		return nil
	}
	if b.MediaType == runtime.ContentTypeProtobuf {
		return apierrors.NewBadRequest("this action's body is JSON or YAML, not " + b.MediaType)
	}
	if err := utilyaml.Unmarshal(b.Data, v); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("cannot decode the request body: %v", err))
	}
	return nil
}

// Decode reads the body into opts, one of the option types of kubevirt.io/v1; an empty body
// leaves opts as they are. JSON and YAML bodies may carry unknown fields (ignored, as
// KubeVirt does) and need no apiVersion or kind; a protobuf body must be of opts' kind.
func (b Body) Decode(opts runtime.Object) error {
	if len(b.Data) == 0 {
		return nil
	}
	if b.MediaType != runtime.ContentTypeProtobuf {
		if err := utilyaml.Unmarshal(b.Data, opts); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot decode the request body: %v", err))
		}
		return nil
	}
	info, _ := runtime.SerializerInfoForMediaType(optionsCodecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	decoded, gvk, err := info.Serializer.Decode(b.Data, nil, nil)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("cannot decode the request body: %v", err))
	}
	want := reflect.TypeOf(opts)
	if reflect.TypeOf(decoded) != want {
		return apierrors.NewBadRequest(fmt.Sprintf("the request body is a %s, not a %s", gvk.Kind, want.Elem().Name()))
	}
	reflect.ValueOf(opts).Elem().Set(reflect.ValueOf(decoded).Elem())
	return nil
}

// IsDryRun says whether a dryRun option asks to change nothing.
func IsDryRun(dryRun []string) bool {
	for _, d := range dryRun {
		if d == metav1.DryRunAll {
			return true
		}
	}
	return false
}
