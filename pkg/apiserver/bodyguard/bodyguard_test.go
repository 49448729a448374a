package bodyguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestCheck(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		bad                     bool
	}{
		{"a fine instance", "application/json", `{"spec":{"domain":{"resources":{"requests":{"memory":"64Mi"}}}}}`, false},
		{"a string deep in a map", "application/json", `{"spec":{"domain":{"resources":{"requests":{"memory":"64Mi","example.com/x":"1e-99999999"}}}}}`, true},
		{"an unquoted number", "application/json; charset=utf-8", `{"spec":{"domain":{"memory":{"guest":1e-99999999}}}}`, true},
		{"an escaped e", "application/json", `{"a":"1\u0065-99999999"}`, true},
		{"in a list", "application/merge-patch+json", `{"spec":{"volumes":[{"name":"a"},{"emptyDisk":{"capacity":"1e999"}}]}}`, true},
		{"a JSON patch value", "application/json-patch+json", `[{"op":"add","path":"/spec/domain/memory/guest","value":"1e-99999999"}]`, true},
		{"a quoted YAML string", "application/yaml", "spec:\n  domain:\n    memory:\n      guest: \"1e-99999999\"\n", true},
		{"an apply patch", "application/apply-patch+yaml", "spec:\n  domain:\n    memory:\n      guest: '1e-99999999'\n", true},
		{"a fine YAML body", "application/yaml", "spec:\n  domain:\n    memory:\n      guest: 1Gi\n", false},
		{"not JSON at all", "application/json", `{"spec":`, false},
		{"another content type", "application/octet-stream", "1e-99999999", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.bad, Check([]byte(tc.body), tc.contentType) != "")
		})
	}
}

func TestWithQuantityGuard(t *testing.T) {
	var got string
	h := WithQuantityGuard(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(req.Body)
		require.NoError(t, err)
		got = string(b)
	}), 64)
	post := func(body string) *httptest.ResponseRecorder {
		got = ""
		req := httptest.NewRequest(http.MethodPost, "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances", strings.NewReader(body))
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
