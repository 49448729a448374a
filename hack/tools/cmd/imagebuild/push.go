package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push writes an image or image index, with every blob the registry lacks, to ref. caFile,
// when set, is the only CA the registry's certificate may be signed by (the local cluster's
// registry has a certificate of the cluster CA). For a registry on a private or loopback
// address go-containerregistry tries plain HTTP besides HTTPS; a TLS-only registry (the local
// cluster's) refuses it, and logs the attempt.
func push(ref name.Tag, t remote.Taggable, caFile string) error {
	transport := remote.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-ca %s: no PEM certificate", caFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	// Credentials of docker login, if any; the local cluster's registry needs none.
	if err := remote.Push(ref, t, remote.WithTransport(transport), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}
