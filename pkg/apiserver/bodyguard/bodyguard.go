// Package bodyguard refuses request bodies holding quantities that would keep virt-api
// busy for seconds to hours while it decodes them, before they reach the decoder.
//
// resource.ParseQuantity (k8s.io/apimachinery, as of v0.34) rounds a quantity to nano
// precision with big-integer arithmetic whose cost grows with the decimal exponent and the
// number of digits: "1e-99999999" takes 100 s to parse, "1e-2147483647" far longer, a
// million-digit mantissa 4 s (upstream: kubernetes/kubernetes#141306). Quantities are
// decoded before validation can say anything, and a VirtualMachineInstance may hold any
// number of them (resource maps, emptyDisk capacities), so one request from anyone who may
// create an instance could occupy virt-api. No real quantity needs an exponent of three
// digits or more than a few dozen characters, so any string or number that looks like a
// quantity and has either is refused with a 400. Protobuf bodies carry the same risk (a
// Quantity's protobuf form is its string, parsed while the body is decoded) and are looked
// at as well.
//
// A guard is only as good as its reading of the body: it must read every body the way the
// server behind it will, or a client picks the reading the guard skips. So it takes the
// body's type from the same header with the server's own rules (readingOf), looks at the
// body in the reading the server will give it (an action reads YAML whatever the type says),
// and refuses the types it cannot read. It does no work the server would not do: a body the
// server refuses unread is not read here either.
package bodyguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/yaml"

	"github.com/hangarvm/hangar/pkg/registry/action"
)

const (
	// MaxQuantityLength bounds a quantity-like value: 64 characters hold every quantity a
	// resource can take (an int64 in any unit, with room to spare) and parse in microseconds.
	MaxQuantityLength = 64
	// MaxExponent bounds the decimal exponent of a quantity-like value: |e| ≤ 99, which
	// covers 1e18 and every SI suffix, and keeps the rounding to nano cheap.
	MaxExponent = 99
)

// defaultMaxBytes is the API server's default limit on a request body.
const defaultMaxBytes = 3 * 1024 * 1024

// Problem says what makes a value unsafe to parse as a quantity, or "" if nothing does (or
// it is no quantity at all).
func Problem(s string) string {
	s = strings.TrimSpace(s)
	if !quantityLike(s) {
		return ""
	}
	if len(s) > MaxQuantityLength {
		return fmt.Sprintf("a quantity of %d characters (at most %d)", len(s), MaxQuantityLength)
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp := strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")
		if len(exp) > 2 {
			return fmt.Sprintf("a quantity with the exponent %s (at most %d)", s[i+1:], MaxExponent)
		}
	}
	return ""
}

// quantityLike is ParseQuantity's grammar, ^[+-]?[0-9.]+([eEinumkKMGTP]*[-+]?[0-9]*)$,
// without a regular expression (bodies are scanned whole).
func quantityLike(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	start := i
	for i < len(s) && (s[i] == '.' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	if i == start {
		return false
	}
	for i < len(s) && strings.IndexByte("eEinumkKMGTP", s[i]) >= 0 {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i == len(s)
}

// reading is how the API server will read a request's body.
type reading int

const (
	// readsNothing: the server refuses the request before it reads the body (a type it does
	// not take answers 415 first), or reads nothing in it that is parsed as a quantity.
	readsNothing reading = iota
	// readsJSON: JSON; a body that is not JSON is refused by the decoder as well.
	readsJSON
	// readsYAML: YAML, converted to JSON first, as the API server does (YAML holds JSON).
	readsYAML
	// readsProtobuf: the Kubernetes protobuf envelope.
	readsProtobuf
	// unreadable: a type the server decodes that the guard cannot look into (CBOR, should
	// a feature gate ever turn it on): refused, never passed unchecked.
	unreadable
)

// readingOf says how the server reads the body of a write, from the same header and with the
// same rules: a patch's type is the header cut at its first ';' (the patch handler's rule,
// which keeps "application/merge-patch+json; x" although it is no valid media type); a
// create's or update's type is chosen by the server's own negotiation, an empty header
// meaning JSON. An action (rawBody: a subresource that reads its body itself) reads protobuf
// when the type says so and YAML whatever else it says, and nothing past its own limit.
func readingOf(method, contentType string, serializer runtime.NegotiatedSerializer, rawBody bool, size int) reading {
	if method == http.MethodPatch {
		if i := strings.Index(contentType, ";"); i > 0 {
			contentType = contentType[:i]
		}
		switch types.PatchType(contentType) {
		case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
			return readsJSON
		case types.ApplyYAMLPatchType:
			return readsYAML
		case types.ApplyCBORPatchType:
			return unreadable
		}
		return readsNothing
	}
	if rawBody {
		if size > action.MaxBodyBytes {
			return readsNothing // refused by the action unread
		}
		if media, _, err := mime.ParseMediaType(contentType); err == nil && media == runtime.ContentTypeProtobuf {
			return readsProtobuf
		}
		return readsYAML
	}
	info, err := negotiation.NegotiateInputSerializerForMediaType(contentType, false, serializer)
	if err != nil {
		return readsNothing // 415
	}
	switch info.MediaType {
	case runtime.ContentTypeJSON:
		return readsJSON
	case runtime.ContentTypeYAML:
		return readsYAML
	case runtime.ContentTypeProtobuf:
		return readsProtobuf
	}
	return unreadable
}

// CheckJSON looks at every string and number of a JSON body and returns the first problem,
// or "". A body that is not JSON passes: the decoder refuses it.
func CheckJSON(body []byte) string {
	v, err := decodeJSON(body)
	if err != nil {
		return ""
	}
	return walk(v)
}

// CheckYAML is CheckJSON of a YAML body as the decoder sees it: converted to JSON first, as
// the API server does.
func CheckYAML(body []byte) string {
	converted, err := yaml.YAMLToJSON(body)
	if err != nil {
		return ""
	}
	return CheckJSON(converted)
}

// decodeJSON decodes exactly one JSON value, keeping each number's literal: its exponent is
// what matters.
func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func walk(v any) string {
	switch v := v.(type) {
	case string:
		return Problem(v)
	case json.Number:
		return Problem(string(v))
	case []any:
		for _, e := range v {
			if p := walk(e); p != "" {
				return p
			}
		}
	case map[string]any:
		for _, e := range v {
			if p := walk(e); p != "" {
				return p
			}
		}
	}
	return ""
}

// Guard refuses writes whose bodies hold quantities too costly to decode, reading each body
// as the API server behind it will.
type Guard struct {
	serializer runtime.NegotiatedSerializer
	maxBytes   int64
}

// New returns a guard for a server that decodes with serializer and reads bodies of at most
// maxBytes (0: the API server's default).
func New(serializer runtime.NegotiatedSerializer, maxBytes int64) *Guard {
	if maxBytes <= 0 {
		maxBytes = defaultMaxBytes
	}
	return &Guard{serializer: serializer, maxBytes: maxBytes}
}

// Refusal is the guard's answer to a body it does not let through.
type Refusal struct {
	Reason  metav1.StatusReason
	Message string
}

// Code is the refusal's HTTP status.
func (r *Refusal) Code() int {
	if r.Reason == metav1.StatusReasonUnsupportedMediaType {
		return http.StatusUnsupportedMediaType
	}
	return http.StatusBadRequest
}

// Check says whether the body of a write may go on to the server's decoder. rawBody says
// the write is to a subresource that reads its body itself (an action).
func (g *Guard) Check(method, contentType string, rawBody bool, body []byte) *Refusal {
	var p string
	switch readingOf(method, contentType, g.serializer, rawBody, len(body)) {
	case readsNothing:
		return nil
	case unreadable:
		return &Refusal{Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: fmt.Sprintf("the content type %q is not accepted for writes", contentType)}
	case readsProtobuf:
		p = checkProtobuf(body)
	case readsJSON:
		p = CheckJSON(body)
	case readsYAML:
		p = CheckYAML(body)
	}
	if p == "" {
		return nil
	}
	return &Refusal{Reason: metav1.StatusReasonBadRequest,
		Message: "the request body holds " + p + ": refused, it would take too long to decode"}
}

// readsItsBody says whether a request goes to a subresource that reads its body itself
// rather than through the server's decoder: the actions (start, stop, ...). Writes that are
// not to a resource (the eviction webhook's reviews) decode no quantity.
func readsItsBody(req *http.Request) (rawBody, resource bool) {
	info, ok := request.RequestInfoFrom(req.Context())
	if !ok || !info.IsResourceRequest {
		return false, false
	}
	switch info.Subresource {
	case "", "status", "scale":
		return false, true
	}
	return true, true
}

// Wrap refuses a write whose body Check refuses. Bodies over the limit are passed on
// untouched: the API server refuses them. Install it inside authentication, so only
// authenticated bodies are read.
func (g *Guard) Wrap(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil || (req.Method != http.MethodPost && req.Method != http.MethodPut && req.Method != http.MethodPatch) {
			handler.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, g.maxBytes+1))
		if err != nil {
			writeStatus(w, &Refusal{Reason: metav1.StatusReasonBadRequest, Message: fmt.Sprintf("read request body: %v", err)})
			return
		}
		rest := req.Body
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), rest), rest}
		rawBody, resource := readsItsBody(req)
		if resource && int64(len(body)) <= g.maxBytes {
			if r := g.Check(req.Method, req.Header.Get("Content-Type"), rawBody, body); r != nil {
				writeStatus(w, r)
				return
			}
		}
		handler.ServeHTTP(w, req)
	})
}

// writeStatus answers with a metav1.Status, as the API server would.
func writeStatus(w http.ResponseWriter, r *Refusal) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(r.Code()), Reason: r.Reason, Message: r.Message,
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Code())
	_ = json.NewEncoder(w).Encode(&status)
}
