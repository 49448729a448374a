package metricsserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestGuard: no token is 401, a token without the right to get /metrics 403; only an allowed
// caller reaches the metrics, and its token does not.
func TestGuard(t *testing.T) {
	authn := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		switch r.Header.Get("Authorization") {
		case "Bearer prometheus":
			return &authenticator.Response{User: &user.DefaultInfo{Name: "system:serviceaccount:monitoring:prometheus"}}, true, nil
		case "Bearer tenant":
			return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
		}
		return nil, false, nil
	})
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == "system:serviceaccount:monitoring:prometheus" && a.GetVerb() == "get" &&
			a.GetPath() == Path && !a.IsResourceRequest() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	var sawToken string
	h := Guard(authn, authz, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawToken = r.Header.Get("Authorization")
		_, _ = w.Write([]byte("kubevirt_vmi_info 1\n"))
	}))
	tests := []struct {
		name, token string
		want        int
	}{
		{"no credential", "", http.StatusUnauthorized},
		{"an unknown token", "Bearer forged", http.StatusUnauthorized},
		{"a user without the right", "Bearer tenant", http.StatusForbidden},
		{"prometheus", "Bearer prometheus", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sawToken = "unset"
			r := httptest.NewRequest(http.MethodGet, Path, nil)
			if tt.token != "" {
				r.Header.Set("Authorization", tt.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tt.want, w.Code)
			if tt.want == http.StatusOK {
				assert.Contains(t, w.Body.String(), "kubevirt_vmi_info")
				assert.Empty(t, sawToken, "the token stops at the guard")
			} else {
				assert.Equal(t, "unset", sawToken, "refused requests reach nothing")
			}
		})
	}
}

// TestInsecureOnlyOnLoopback: plain HTTP without authentication is refused anywhere but on a
// loopback address.
func TestInsecureOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "10.1.2.3:0", "localhost:0"} {
		_, err := New(Options{Address: addr, Insecure: true}, http.NotFoundHandler(), nil)
		require.Error(t, err, addr)
	}
	s, err := New(Options{Address: "127.0.0.1:0", Insecure: true}, http.NotFoundHandler(), nil)
	require.NoError(t, err)
	require.NoError(t, s.ln.Close())
}
