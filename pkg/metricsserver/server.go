// Package metricsserver serves a component's /metrics over HTTPS to callers Kubernetes
// authorizes: the bearer token is checked with a TokenReview and the caller's right to
// `get` the non-resource URL /metrics with a SubjectAccessReview, as kube-controller-manager,
// the kubelet and kube-rbac-proxy do. Prometheus scrapes with its ServiceAccount token; a
// ClusterRole with nonResourceURLs ["/metrics"] and verb get grants it
// (artifacts/components/metrics.yaml). The metrics name every instance on a node and its usage, which
// is more than a tenant may see: nothing is served without authorization.
//
// The serving certificate is given (files) or made at start, self-signed, as KubeVirt does for
// its metrics; Prometheus then scrapes with insecure_skip_verify, or with the CA of the given
// certificate.
package metricsserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// Path is where the metrics are served, and the non-resource URL a caller must be allowed to get.
const Path = "/metrics"

// Options say where and how to serve.
type Options struct {
	// Address to listen on (host:port); empty or "0": not served.
	Address string
	// CertFile and KeyFile are the serving certificate; empty: self-signed, made at start.
	CertFile, KeyFile string
	// Insecure serves plain HTTP without authentication, and only on a loopback address: for
	// tests and development on one machine.
	Insecure bool
}

// Enabled says whether anything is to be served.
func (o Options) Enabled() bool { return o.Address != "" && o.Address != "0" }

// Server serves metrics until its context ends.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// New listens on o.Address and guards metrics with kube's authentication and authorization.
func New(o Options, metrics http.Handler, kube kubernetes.Interface) (*Server, error) {
	if o.Insecure {
		host, _, err := net.SplitHostPort(o.Address)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("metrics without authentication only on a loopback address, not %q", o.Address)
		}
	}
	ln, err := net.Listen("tcp", o.Address)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	if o.Insecure {
		mux.Handle(Path, metrics)
		return s, nil
	}
	authn, authz, err := delegated(kube)
	if err != nil {
		ln.Close()
		return nil, err
	}
	mux.Handle(Path, Guard(authn, authz, metrics))
	cert, err := servingCertificate(o, ln.Addr())
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	s.ln = tls.NewListener(ln, s.srv.TLSConfig)
	return s, nil
}

// Addr is the address listened on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shutdown)
	}()
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// delegated checks tokens and rights with kube-apiserver, caching answers briefly: a scrape
// every 15 s costs no review once cached.
func delegated(kube kubernetes.Interface) (authenticator.Request, authorizer.Authorizer, error) {
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		TokenAccessReviewClient:  kube.AuthenticationV1(),
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      backoff,
		CacheTTL:                 2 * time.Minute,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       backoff,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("metrics authorization: %w", err)
	}
	return authn, authz, nil
}

// Guard admits requests whose caller authn recognizes and authz allows to get the request's
// path (a non-resource URL): 401 without a recognized credential, 403 without the right.
func Guard(authn authenticator.Request, authz authorizer.Authorizer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			if err != nil {
				klog.V(2).InfoS("metrics: authentication failed", "err", err, "remote", r.RemoteAddr)
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{User: resp.User, Verb: "get", Path: r.URL.Path, ResourceRequest: false}
		decision, reason, err := authz.Authorize(r.Context(), attrs)
		if decision != authorizer.DecisionAllow {
			klog.V(2).InfoS("metrics: forbidden", "user", resp.User.GetName(), "reason", reason, "err", err)
			http.Error(w, fmt.Sprintf("%q may not get %s", resp.User.GetName(), r.URL.Path), http.StatusForbidden)
			return
		}
		// The token reached us; it must go no further.
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})
}

// servingCertificate is the given one, or a self-signed one for the host's name and the
// listening address.
func servingCertificate(o Options, addr net.Addr) (tls.Certificate, error) {
	if o.CertFile != "" || o.KeyFile != "" {
		c, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return c, fmt.Errorf("metrics serving certificate: %w", err)
		}
		return c, nil
	}
	host, _ := os.Hostname()
	var ips []net.IP
	if a, ok := addr.(*net.TCPAddr); ok && !a.IP.IsUnspecified() {
		ips = append(ips, a.IP)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, ips, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed metrics certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
