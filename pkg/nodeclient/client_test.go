package nodeclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/proxy"

	"github.com/hangarvm/hangar/pkg/migration/identity"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) issue(t *testing.T, subject pkix.Name, dnsNames []string, usage x509.ExtKeyUsage) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject, DNSNames: dnsNames,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// nodeIdentity is node's certificate as virt-controller's signer issues it.
func (ca *testCA) nodeIdentity(t *testing.T, node string) tls.Certificate {
	req := identity.Template(node)
	return ca.issue(t, req.Subject, req.DNSNames, x509.ExtKeyUsageServerAuth)
}

func writePEM(t *testing.T, dir, name, kind string, der []byte) string {
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
	return path
}

// A handler must hold the identity of the node virt-api dials it for: the shared certificate
// every handler once had, another node's identity (a compromised node answering at this
// node's address), a node identity from another CA, or a certificate of the right CA that is
// no node identity are all refused, for calls and for streams alike.
func TestHandlerMustHoldTheIdentityOfItsNode(t *testing.T) {
	nodeCA, clientCA, otherCA := newTestCA(t), newTestCA(t), newTestCA(t)
	dir := t.TempDir()
	client := clientCA.issue(t, pkix.Name{CommonName: "virt-api"}, nil, x509.ExtKeyUsageClientAuth)
	keyDER, err := x509.MarshalPKCS8PrivateKey(client.PrivateKey)
	require.NoError(t, err)
	cfg := Config{Port: 18186,
		CAFile:   writePEM(t, dir, "node-ca.crt", "CERTIFICATE", nodeCA.cert.Raw),
		CertFile: writePEM(t, dir, "client.crt", "CERTIFICATE", client.Certificate[0]),
		KeyFile:  writePEM(t, dir, "client.key", "PRIVATE KEY", keyDER)}
	clientPool := x509.NewCertPool()
	clientPool.AddCert(clientCA.cert)

	tests := []struct {
		name    string
		serving tls.Certificate
		wantErr string
	}{
		{"its own node's identity", nodeCA.nodeIdentity(t, "node-a"), ""},
		{"the shared certificate of old", nodeCA.issue(t, pkix.Name{CommonName: "virt-handler"}, []string{"virt-handler"}, x509.ExtKeyUsageServerAuth),
			"certificate is valid for virt-handler, not node-a"},
		{"another node's identity", nodeCA.nodeIdentity(t, "node-b"), "certificate is valid for node-b, not node-a"},
		{"an identity from another CA", otherCA.nodeIdentity(t, "node-a"), "certificate signed by unknown authority"},
		{"the node's name in a certificate that is no identity", nodeCA.issue(t, pkix.Name{CommonName: "node-a"}, []string{"node-a"}, x509.ExtKeyUsageServerAuth),
			"is no migration identity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{tc.serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientPool}
			srv.StartTLS()
			defer srv.Close()
			cfg := cfg
			cfg.StaticAddress = srv.URL // wherever node-a's handler is found, this server answers
			c, err := New(cfg, nil)
			require.NoError(t, err)

			answer, err := c.Call(context.Background(), "node-a", "ns", "vm", http.MethodGet, "guestosinfo", nil)
			u, uerr := c.InstanceURL(context.Background(), "node-a", "ns", "vm", "console")
			require.NoError(t, uerr)
			conn, dialErr := proxy.DialURL(context.Background(), u, c.Transport()) // how a stream dials
			if conn != nil {
				conn.Close()
			}
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, "ok", string(answer))
				assert.NoError(t, dialErr)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
			assert.ErrorContains(t, dialErr, tc.wantErr)
		})
	}
}

// A rotated CA applies without a restart: the client trusts what the file holds now.
func TestRotatedCAApplies(t *testing.T) {
	oldCA, newCA, clientCA := newTestCA(t), newTestCA(t), newTestCA(t)
	dir := t.TempDir()
	caPath := writePEM(t, dir, "ca.crt", "CERTIFICATE", oldCA.cert.Raw)
	clientPool := x509.NewCertPool()
	clientPool.AddCert(clientCA.cert)
	client := clientCA.issue(t, pkix.Name{CommonName: "virt-api"}, nil, x509.ExtKeyUsageClientAuth)
	keyDER, err := x509.MarshalPKCS8PrivateKey(client.PrivateKey)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{newCA.nodeIdentity(t, "node-a")}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientPool}
	srv.StartTLS()
	defer srv.Close()
	c, err := New(Config{StaticAddress: srv.URL, Port: 1, CAFile: caPath,
		CertFile: writePEM(t, dir, "client.crt", "CERTIFICATE", client.Certificate[0]),
		KeyFile:  writePEM(t, dir, "client.key", "PRIVATE KEY", keyDER)}, nil)
	require.NoError(t, err)
	_, err = c.Call(context.Background(), "node-a", "ns", "vm", http.MethodGet, "guestosinfo", nil)
	assert.ErrorContains(t, err, "unknown authority", "the handler's identity is of a CA not trusted yet")

	bundle := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: newCA.cert.Raw}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: oldCA.cert.Raw})...)
	require.NoError(t, os.WriteFile(caPath, bundle, 0o600))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(caPath, later, later))
	answer, err := c.Call(context.Background(), "node-a", "ns", "vm", http.MethodGet, "guestosinfo", nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(answer))
}
