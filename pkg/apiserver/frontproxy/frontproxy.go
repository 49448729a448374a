// Package frontproxy authenticates the requests kube-apiserver's aggregator proxies to
// virt-api as k8s.io/apiserver's request-header authenticator does, but verifies the proxy's
// certificate chain once instead of on every request.
//
// k8s.io/apiserver verifies the front proxy's chain on every request (an ECDSA or RSA
// signature check, kubernetes/kubernetes#90533): about 8 % of virt-api's CPU per create. The
// proxy presents the same certificate on every connection, and the TLS handshake has already
// proved that the peer holds that certificate's key, so a chain verified once against a CA
// bundle stays verified while every certificate in it is within its dates and the bundle is
// the same. The authenticator answers only when it can say yes; every other request, and
// every check that fails, goes to the delegated authenticator unchanged.
package frontproxy

import (
	"crypto/sha256"
	"crypto/x509"
	"net/http"
	"slices"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// cacheSize bounds the verified chains kept: one per front-proxy certificate in use (one per
// kube-apiserver, two while one rotates), and only certificates of the front-proxy CA with an
// allowed name get in.
const cacheSize = 16

// Authenticator is the front-proxy authenticator with verified chains cached, in front of the
// delegated authenticator.
type Authenticator struct {
	config   *authenticatorfactory.RequestHeaderConfig
	headers  authenticator.Request
	delegate authenticator.Request
	clock    clock.PassiveClock
	verified *lru.Cache // sha256 of the leaf certificate -> verification
}

// verification is what one chain verification established: the leaf chains to a CA of roots,
// for as long as every certificate of the chain is within its dates.
type verification struct {
	roots               *x509.CertPool
	notBefore, notAfter time.Time
}

// New returns an authenticator that answers for the front proxy that config describes and
// leaves every other request to delegate, the server's authenticator (which still holds the
// uncached front-proxy authenticator, so every refusal is delegate's own).
func New(config *authenticatorfactory.RequestHeaderConfig, delegate authenticator.Request) *Authenticator {
	return NewWithClock(config, delegate, clock.RealClock{})
}

// NewWithClock is New with the time taken from clk.
func NewWithClock(config *authenticatorfactory.RequestHeaderConfig, delegate authenticator.Request, clk clock.PassiveClock) *Authenticator {
	return &Authenticator{
		config: config,
		// As in DelegatingAuthenticatorConfig: the headers' identity, authenticated.
		headers: group.NewAuthenticatedGroupAdder(headerrequest.NewDynamic(config.UsernameHeaders, config.UIDHeaders,
			config.GroupHeaders, config.ExtraHeaderPrefixes)),
		delegate: delegate,
		clock:    clk,
		verified: lru.New(cacheSize),
	}
}

// AuthenticateRequest implements authenticator.Request.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if a.isFrontProxy(req) {
		// The header authenticator removes the headers it read once it succeeds.
		if resp, ok, err := a.headers.AuthenticateRequest(req); ok && err == nil {
			return resp, true, nil
		}
	}
	return a.delegate.AuthenticateRequest(req)
}

// isFrontProxy says whether the request's client certificate chains to the front-proxy CA
// and names an allowed proxy, as k8s.io/apiserver's x509 Verifier checks, from the cache when
// it can.
func (a *Authenticator) isFrontProxy(req *http.Request) bool {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return false
	}
	opts, ok := a.config.CAContentProvider.VerifyOptions()
	if !ok {
		return false
	}
	leaf := req.TLS.PeerCertificates[0]
	// Allowed names can change with the cluster's configuration: checked every time.
	if allowed := a.config.AllowedClientNames.Value(); len(allowed) > 0 && !slices.Contains(allowed, leaf.Subject.CommonName) {
		return false
	}
	now := a.clock.Now()
	key := sha256.Sum256(leaf.Raw)
	if v, ok := a.verified.Get(key); ok {
		v := v.(verification)
		// A new CA bundle is a new pool: the chain is verified again against it.
		if v.roots == opts.Roots && !now.Before(v.notBefore) && !now.After(v.notAfter) {
			return true
		}
	}
	if opts.Intermediates == nil && len(req.TLS.PeerCertificates) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range req.TLS.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	opts.CurrentTime = now
	chains, err := leaf.Verify(opts)
	if err != nil || len(chains) == 0 {
		return false
	}
	v := verification{roots: opts.Roots, notBefore: leaf.NotBefore, notAfter: leaf.NotAfter}
	for _, c := range chains[0][1:] {
		if c.NotBefore.After(v.notBefore) {
			v.notBefore = c.NotBefore
		}
		if c.NotAfter.Before(v.notAfter) {
			v.notAfter = c.NotAfter
		}
	}
	a.verified.Add(key, v)
	return true
}
