package bodyguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func TestProblem(t *testing.T) {
	for _, ok := range []string{"", "64Mi", "1Gi", "100m", "1e9", "1E18", "1.5", "-1e-99", " 16Ti ", "5E", "2Ei",
		"1e0000000000099", // leading zeros: the exponent is 99
		"hello", "e1000", "model-e1000", "10.0.2.0/24", "de:ad:00:00:be:af", "#cloud-config\nfoo: 1e-99999999\n",
		strings.Repeat("1", 64)} {
		assert.Empty(t, Problem(ok), "%q", ok)
	}
	for _, bad := range []string{"1e-99999999", "1e-2147483647", "1E999999999", "+1e100", "1e+100", "0.5e-00100", "1Ee999",
		strings.Repeat("1", 65), "0." + strings.Repeat("0", 100) + "1"} {
		assert.NotEmpty(t, Problem(bad), "%q", bad)
	}
}

// codecs stands for the server's serializer: JSON, YAML and protobuf, as virt-api's.
var codecs = serializer.NewCodecFactory(runtime.NewScheme())

func TestCheck(t *testing.T) {
	const bad = `{"spec":{"domain":{"memory":{"guest":"1e-99999999"}}}}`
	tests := []struct {
		name, method, contentType, body string
		action                          bool // to a subresource that reads its body itself
		want                            int  // 0: let through
	}{
		{"a fine instance", "POST", "application/json", `{"spec":{"domain":{"resources":{"requests":{"memory":"64Mi"}}}}}`, false, 0},
		{"a string deep in a map", "POST", "application/json", `{"spec":{"domain":{"resources":{"requests":{"memory":"64Mi","example.com/x":"1e-99999999"}}}}}`, false, 400},
		{"an unquoted number", "PUT", "application/json; charset=utf-8", `{"spec":{"domain":{"memory":{"guest":1e-99999999}}}}`, false, 400},
		{"an escaped e", "POST", "application/json", `{"a":"1\u0065-99999999"}`, false, 400},
		{"in a list", "PATCH", "application/merge-patch+json", `{"spec":{"volumes":[{"name":"a"},{"emptyDisk":{"capacity":"1e999"}}]}}`, false, 400},
		{"a JSON patch value", "PATCH", "application/json-patch+json", `[{"op":"add","path":"/spec/domain/memory/guest","value":"1e-99999999"}]`, false, 400},
		{"a strategic merge patch", "PATCH", "application/strategic-merge-patch+json", bad, false, 400},
		{"a quoted YAML string", "POST", "application/yaml", "spec:\n  domain:\n    memory:\n      guest: \"1e-99999999\"\n", false, 400},
		{"an apply patch", "PATCH", "application/apply-patch+yaml", "spec:\n  domain:\n    memory:\n      guest: '1e-99999999'\n", false, 400},
		{"a fine YAML body", "POST", "application/yaml", "spec:\n  domain:\n    memory:\n      guest: 1Gi\n", false, 0},
		{"not JSON at all", "POST", "application/json", `{"spec":`, false, 0},

		// The server reads these although the guard once did not.
		{"a patch type with a parameter mime cannot parse", "PATCH", "application/merge-patch+json; x", bad, false, 400},
		{"a patch type with a bare semicolon", "PATCH", "application/merge-patch+json;", bad, false, 400},
		{"an apply patch with a parameter", "PATCH", "application/apply-patch+yaml; x=y; z", "spec: {domain: {memory: {guest: '1e-99999999'}}}", false, 400},
		{"no content type on a create", "POST", "", bad, false, 400},
		{"no content type on an update", "PUT", "", bad, false, 400},
		{"a media type in capitals", "POST", "Application/JSON", bad, false, 400},
		{"an action's YAML sent as JSON", "PUT", "application/json", "spec:\n  guest: \"1e-99999999\"\n", true, 400},
		{"an action's body of a type the server refuses", "PUT", "application/x-www-form-urlencoded", bad, true, 400},
		{"an action's body of a type mime cannot parse", "POST", "application/json; x", bad, true, 400},
		{"an action's body of no type", "PUT", "", bad, true, 400},
		{"JSON followed by more", "POST", "application/json", `{} ` + bad, false, 0},

		// Refused unread by the server: the guard does not read them either (a YAML body of a
		// few MiB takes a second to parse).
		{"a create of a type the server refuses", "POST", "application/x-www-form-urlencoded", bad, false, 0},
		{"a create as YAML sent as JSON", "POST", "application/json", "spec:\n  guest: \"1e-99999999\"\n", false, 0},
		{"an unknown patch type", "PATCH", "application/json", bad, false, 0},
		{"a patch type in capitals", "PATCH", "Application/Merge-Patch+JSON", bad, false, 0},
		{"a patch type after a semicolon", "PATCH", ";application/merge-patch+json", bad, false, 0},
		{"an action's body past its limit", "PUT", "application/json", `{"a":"1e-99999999","pad":"` + strings.Repeat("x", 64<<10) + `"}`, true, 0},
		// Types the guard cannot read are refused, not passed unchecked.
		{"a CBOR apply patch", "PATCH", "application/apply-patch+cbor", "\xa0", false, 415},
	}
	g := New(codecs, 0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := g.Check(tc.method, tc.contentType, tc.action, []byte(tc.body))
			if tc.want == 0 {
				assert.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			assert.Equal(t, tc.want, r.Code(), r.Message)
		})
	}
}

func TestWrap(t *testing.T) {
	var got string
	h := New(codecs, 64).Wrap(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(req.Body)
		require.NoError(t, err)
		got = string(b)
	}))
	post := func(body string) *httptest.ResponseRecorder {
		got = ""
		req := httptest.NewRequest(http.MethodPost, "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances", strings.NewReader(body))
		// As the server's chain has it by the time the guard runs.
		req = req.WithContext(request.WithRequestInfo(req.Context(), &request.RequestInfo{IsResourceRequest: true,
			Verb: "create", APIGroup: "kubevirt.io", APIVersion: "v1", Namespace: "ns", Resource: "virtualmachineinstances"}))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	rec := post(`{"memory":"64Mi"}`)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, `{"memory":"64Mi"}`, got, "the handler reads the body it would have read")

	rec = post(`{"memory":"1e-99999999"}`)
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Empty(t, got, "a refused body goes no further")
	assert.Contains(t, rec.Body.String(), `"kind":"Status"`)
	assert.Contains(t, rec.Body.String(), "exponent")

	long := `{"memory":"1e-99999999","padding":"` + strings.Repeat("x", 100) + `"}`
	rec = post(long)
	assert.Equal(t, http.StatusOK, rec.Code, "over the limit: left to the API server, which refuses it")
	assert.Equal(t, long, got, "and passed on whole")
}
