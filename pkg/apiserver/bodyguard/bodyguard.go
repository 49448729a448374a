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
package bodyguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
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

// Check looks at every string and number of a JSON or YAML body (as the decoder will see
// them: YAML is converted to JSON first, as the API server does), and at every string of a
// protobuf body (checkProtobuf), and returns the first problem, or "". Other content types
// are not looked at: virt-api does not decode them (CBOR is a test-only feature of
// k8s.io/apimachinery v0.34, off in virt-api).
func Check(body []byte, contentType string) string {
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	switch {
	case media == runtime.ContentTypeProtobuf:
		return checkProtobuf(body)
	case strings.HasSuffix(media, "json"):
	case strings.HasSuffix(media, "yaml"):
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return "" // the decoder refuses it
		}
	default:
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // keep a number's literal: its exponent is what matters
	var v any
	if err := dec.Decode(&v); err != nil {
		return ""
	}
	return walk(v)
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

// WithQuantityGuard refuses a write whose body Check finds a problem in, with a 400 that
// names it. Bodies over maxBytes are passed on untouched: the API server refuses them.
// Install it inside authentication, so only authenticated bodies are read.
func WithQuantityGuard(handler http.Handler, maxBytes int64) http.Handler {
	if maxBytes <= 0 {
		maxBytes = defaultMaxBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil || (req.Method != http.MethodPost && req.Method != http.MethodPut && req.Method != http.MethodPatch) {
			handler.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, maxBytes+1))
		if err != nil {
			writeBadRequest(w, fmt.Sprintf("read request body: %v", err))
			return
		}
		rest := req.Body
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), rest), rest}
		if int64(len(body)) <= maxBytes {
			if p := Check(body, req.Header.Get("Content-Type")); p != "" {
				writeBadRequest(w, "the request body holds "+p+": refused, it would take too long to decode")
				return
			}
		}
		handler.ServeHTTP(w, req)
	})
}

// writeBadRequest answers with a metav1.Status, as the API server would.
func writeBadRequest(w http.ResponseWriter, msg string) {
	status := apierrors.NewBadRequest(msg).Status()
	status.Kind, status.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(&status)
}
