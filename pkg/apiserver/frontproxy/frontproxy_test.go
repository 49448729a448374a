package frontproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	clocktesting "k8s.io/utils/clock/testing"
)

const proxyName = "front-proxy-client"

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t testing.TB, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &ca{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client issues a client certificate for name, valid for an hour either side of now.
func (c *ca) client(t testing.TB, name string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert
}

func (c *ca) provider(t testing.TB) dynamiccertificates.CAContentProvider {
	t.Helper()
	p, err := dynamiccertificates.NewStaticCAContent("front-proxy", c.pem)
	require.NoError(t, err)
	return p
}

func requestHeaderConfig(p dynamiccertificates.CAContentProvider) *authenticatorfactory.RequestHeaderConfig {
	return &authenticatorfactory.RequestHeaderConfig{
		CAContentProvider:   p,
		AllowedClientNames:  headerrequest.StaticStringSlice{proxyName},
		UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
		UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
		GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
	}
}

// delegated returns a front proxy's configuration, k8s.io/apiserver's delegated authenticator
// for it, and the proxy's certificate.
func delegated(t testing.TB) (*authenticatorfactory.RequestHeaderConfig, authenticator.Request, *x509.Certificate) {
	t.Helper()
	frontProxyCA := newCA(t, "front-proxy")
	cfg := requestHeaderConfig(frontProxyCA.provider(t))
	delegate, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{RequestHeaderConfig: cfg}.New()
	require.NoError(t, err)
	return cfg, delegate, frontProxyCA.client(t, proxyName)
}

// proxied is a request as the aggregator sends it: over TLS with cert, asserting alice.
func proxied(cert *x509.Certificate) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "https://virt-api/apis/kubevirt.io/v1/virtualmachines", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	req.Header.Set("X-Remote-User", "alice")
	req.Header.Set("X-Remote-Group", "team")
	req.Header.Set("X-Remote-Extra-Scopes", "vms")
	return req
}

// refuse is a delegate that authenticates nobody: what the cache says yes to is its own.
func refuse(delegated *int) authenticator.Request {
	return authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		*delegated++
		return nil, false, nil
	})
}

// TestSameAnswerAsTheDelegatedAuthenticator: for the front proxy, the cached path answers
// what k8s.io/apiserver's delegated authenticator answers, the first time and from the cache.
func TestSameAnswerAsTheDelegatedAuthenticator(t *testing.T) {
	cfg, delegate, cert := delegated(t)

	want, ok, err := delegate.AuthenticateRequest(proxied(cert))
	require.NoError(t, err)
	require.True(t, ok)

	var delegated int
	a := New(cfg, refuse(&delegated))
	for i := range 3 {
		req := proxied(cert)
		got, ok, err := a.AuthenticateRequest(req)
		require.NoError(t, err)
		require.True(t, ok, "request %d", i)
		assert.Equal(t, want.User, got.User, "request %d", i)
		assert.Empty(t, req.Header.Get("X-Remote-User"), "the identity headers are removed once read")
	}
	assert.Zero(t, delegated)
	assert.Equal(t, 1, a.verified.Len())
}

// TestRefused: each request must not be authenticated by the cache, also after the genuine
// front proxy's chain was cached. Each performs an attack or a change the cache must see.
func TestRefused(t *testing.T) {
	frontProxyCA := newCA(t, "front-proxy")
	genuine := frontProxyCA.client(t, proxyName)
	rogueCA := newCA(t, "rogue")

	for _, tc := range []struct {
		name string
		// change alters the world after the genuine proxy was authenticated once.
		change func(cfg *authenticatorfactory.RequestHeaderConfig, clk *clocktesting.FakePassiveClock)
		req    func() *http.Request
	}{{
		name: "the proxy's name in a certificate of another CA",
		req:  func() *http.Request { return proxied(rogueCA.client(t, proxyName)) },
	}, {
		name: "the front-proxy CA's certificate for a name not allowed",
		req:  func() *http.Request { return proxied(frontProxyCA.client(t, "someone-else")) },
	}, {
		name: "no client certificate",
		req: func() *http.Request {
			r := proxied(genuine)
			r.TLS.PeerCertificates = nil
			return r
		},
	}, {
		name: "not over TLS",
		req: func() *http.Request {
			r := proxied(genuine)
			r.TLS = nil
			return r
		},
	}, {
		name: "the genuine proxy after the cluster replaced the front-proxy CA",
		change: func(cfg *authenticatorfactory.RequestHeaderConfig, _ *clocktesting.FakePassiveClock) {
			cfg.CAContentProvider = newCA(t, "front-proxy-2").provider(t)
		},
		req: func() *http.Request { return proxied(genuine) },
	}, {
		name: "the genuine proxy after its name was taken off the allowed names",
		change: func(cfg *authenticatorfactory.RequestHeaderConfig, _ *clocktesting.FakePassiveClock) {
			cfg.AllowedClientNames = headerrequest.StaticStringSlice{"another-proxy"}
		},
		req: func() *http.Request { return proxied(genuine) },
	}, {
		name: "the genuine proxy's certificate once expired",
		change: func(_ *authenticatorfactory.RequestHeaderConfig, clk *clocktesting.FakePassiveClock) {
			clk.SetTime(genuine.NotAfter.Add(time.Second))
		},
		req: func() *http.Request { return proxied(genuine) },
	}, {
		name: "the genuine proxy's certificate before its validity",
		change: func(_ *authenticatorfactory.RequestHeaderConfig, clk *clocktesting.FakePassiveClock) {
			clk.SetTime(genuine.NotBefore.Add(-time.Second))
		},
		req: func() *http.Request { return proxied(genuine) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := requestHeaderConfig(frontProxyCA.provider(t))
			clk := clocktesting.NewFakePassiveClock(time.Now())
			var delegated int
			a := NewWithClock(cfg, refuse(&delegated), clk)
			_, ok, err := a.AuthenticateRequest(proxied(genuine))
			require.NoError(t, err)
			require.True(t, ok, "the genuine front proxy")
			if tc.change != nil {
				tc.change(cfg, clk)
			}

			_, ok, err = a.AuthenticateRequest(tc.req())
			require.NoError(t, err)
			assert.False(t, ok)
			assert.Equal(t, 1, delegated, "the delegated authenticator decides")
		})
	}
}

// TestWithoutIdentityHeaders: the front proxy's certificate without identity headers is not an
// identity here; the delegated authenticator decides (it may know the certificate as a user).
func TestWithoutIdentityHeaders(t *testing.T) {
	frontProxyCA := newCA(t, "front-proxy")
	var delegated int
	a := New(requestHeaderConfig(frontProxyCA.provider(t)), refuse(&delegated))
	req := proxied(frontProxyCA.client(t, proxyName))
	req.Header.Del("X-Remote-User")
	_, ok, err := a.AuthenticateRequest(req)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, 1, delegated)
}

// BenchmarkAuthenticate prints what a proxied request's authentication costs with the chain
// verified on every request (k8s.io/apiserver's delegated authenticator) and from the cache.
func BenchmarkAuthenticate(b *testing.B) {
	cfg, delegate, cert := delegated(b)
	for name, a := range map[string]authenticator.Request{"delegated": delegate, "cached": New(cfg, delegate)} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, ok, err := a.AuthenticateRequest(proxied(cert)); !ok || err != nil {
					b.Fatalf("not authenticated: %v", err)
				}
			}
		})
	}
}
