package migrationsigner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes/fake"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/hangarvm/hangar/pkg/migration/identity"
)

const handlerUser = "system:serviceaccount:hangar:virt-handler"

func testCA(t *testing.T) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hangar-migration-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &CA{Cert: cert, Key: key}
}

func request(t *testing.T, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestSignerIssuesOnlyANodesOwnIdentity(t *testing.T) {
	withIP := identity.Template("node-a")
	withIP.IPAddresses = []net.IP{net.ParseIP("10.0.0.1")}
	otherOU := identity.Template("node-a")
	otherOU.Subject.OrganizationalUnit = []string{"x"}
	tests := []struct {
		name    string
		user    string
		nodes   []string
		tmpl    *x509.CertificateRequest
		usages  []certificatesv1.KeyUsage
		issued  bool
		message string
	}{
		{name: "own node", user: handlerUser, nodes: []string{"node-a"}, tmpl: identity.Template("node-a"), usages: identity.Usages, issued: true},
		{name: "another node's name", user: handlerUser, nodes: []string{"node-a"}, tmpl: identity.Template("node-b"), usages: identity.Usages, message: "not node node-a's identity"},
		{name: "a token bound to no node", user: handlerUser, tmpl: identity.Template("node-a"), usages: identity.Usages, message: "bound to no node"},
		{name: "a tenant", user: "system:serviceaccount:tenant:default", nodes: []string{"node-a"}, tmpl: identity.Template("node-a"), usages: identity.Usages, message: "is not virt-handler"},
		{name: "an extra address", user: handlerUser, nodes: []string{"node-a"}, tmpl: withIP, usages: identity.Usages, message: "names other than"},
		{name: "an extra subject field", user: handlerUser, nodes: []string{"node-a"}, tmpl: otherOU, usages: identity.Usages, message: "subject has more"},
		{name: "code signing", user: handlerUser, nodes: []string{"node-a"}, tmpl: identity.Template("node-a"), usages: []certificatesv1.KeyUsage{certificatesv1.UsageCodeSigning}, message: "usage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "req"},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					SignerName: identity.SignerName, Request: request(t, tc.tmpl), Usages: tc.usages,
					Username: tc.user, Extra: map[string]certificatesv1.ExtraValue{},
				},
			}
			if tc.nodes != nil {
				csr.Spec.Extra[serviceaccount.NodeNameKey] = tc.nodes
			}
			kube := fake.NewClientset(csr)
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			ca := testCA(t)
			s := &Signer{kube: kube, lister: certlisters.NewCertificateSigningRequestLister(indexer), ca: ca,
				handlers: sets.New(handlerUser), lifetime: DefaultLifetime, now: time.Now}
			ctx := context.Background()
			// Two rounds, as the informer would bring the approved request back.
			for range 2 {
				stored, err := kube.CertificatesV1().CertificateSigningRequests().Get(ctx, "req", metav1.GetOptions{})
				require.NoError(t, err)
				require.NoError(t, indexer.Update(stored))
				require.NoError(t, s.sync(ctx, "req"))
			}
			got, err := kube.CertificatesV1().CertificateSigningRequests().Get(ctx, "req", metav1.GetOptions{})
			require.NoError(t, err)
			if !tc.issued {
				assert.True(t, has(got, certificatesv1.CertificateDenied), "denied")
				assert.Empty(t, got.Status.Certificate)
				require.NotEmpty(t, got.Status.Conditions)
				assert.Contains(t, got.Status.Conditions[0].Message, tc.message)
				return
			}
			assert.True(t, has(got, certificatesv1.CertificateApproved), "approved")
			block, _ := pem.Decode(got.Status.Certificate)
			require.NotNil(t, block)
			cert, err := x509.ParseCertificate(block.Bytes)
			require.NoError(t, err)
			roots := x509.NewCertPool()
			roots.AddCert(ca.Cert)
			_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node-a", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}})
			require.NoError(t, err)
			node, err := identity.NodeOf(cert)
			require.NoError(t, err)
			assert.Equal(t, "node-a", node)
		})
	}
}
