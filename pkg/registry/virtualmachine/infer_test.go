package virtualmachine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// TestClaimsAsUser: a claim is read for the user who may get it, and not read at all for one
// who may not (403 naming the field and the right).
func TestClaimsAsUser(t *testing.T) {
	mayGet := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == "alice" && a.GetVerb() == "get" && a.GetResource() == "persistentvolumeclaims" &&
			a.GetAPIGroup() == "" && a.GetNamespace() == "ns" && a.GetName() == "root" && a.IsResourceRequest() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no binding", nil
	})
	path := field.NewPath("spec", "instancetype", "inferFromVolume")
	for _, tc := range []struct {
		name       string
		user       string
		authorizer authorizer.Authorizer
		noClaims   bool
		wantLabels map[string]string
		wantReads  int
		check      func(t *testing.T, err error)
	}{
		{name: "a user who may get the claim", user: "alice", authorizer: mayGet, wantLabels: map[string]string{"a": "b"}, wantReads: 1},
		{name: "a user who may not: nothing read", user: "mallory", authorizer: mayGet, check: func(t *testing.T, err error) {
			assert.True(t, apierrors.IsForbidden(err), "got %v", err)
			assert.Contains(t, err.Error(), "spec.instancetype.inferFromVolume")
			assert.Contains(t, err.Error(), `user "mallory" may not get persistentvolumeclaims in namespace "ns" (no binding)`)
		}},
		{name: "no authorizer: every client an admin", user: "mallory", wantLabels: map[string]string{"a": "b"}, wantReads: 1},
		{name: "no claims to read (standalone)", user: "alice", authorizer: mayGet, noClaims: true, check: func(t *testing.T, err error) {
			fieldErr, ok := err.(*field.Error)
			require.True(t, ok, "the VM's error, got %v", err)
			assert.Equal(t, path.String(), fieldErr.Field)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			get := func(_ context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
				reads++
				return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"a": "b"}}}, nil
			}
			c := claimsAsUser{authorizer: tc.authorizer, get: get, vm: "vm1"}
			if tc.noClaims {
				c.get = nil
			}
			ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "ns"), &user.DefaultInfo{Name: tc.user})
			labels, err := c.ClaimLabels(ctx, path, "ns", "root")
			assert.Equal(t, tc.wantReads, reads)
			if tc.check != nil {
				require.Error(t, err)
				tc.check(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantLabels, labels)
		})
	}
}
