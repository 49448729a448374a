package framework

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/hangarvm/hangar/pkg/etcd"
)

// TLSEtcd is a real etcd as Hangar deploys it: clients over TLS, each with a certificate of
// the etcd CA (--client-cert-auth).
type TLSEtcd struct {
	// URL is the https client URL, on loopback.
	URL string
	// CA signed the serving certificate and the client certificates etcd accepts.
	CA *CA
	// Client is a client certificate of CA, like virt-api's (no SANs: etcd checks a
	// client certificate's SANs against the connecting address).
	Client *KeyPair
}

// StartTLSEtcd starts an etcd that admits only clients with a certificate of its CA, and
// stops it when the test ends.
func StartTLSEtcd(t testing.TB) *TLSEtcd {
	t.Helper()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := NewCA(pki, "hangar-etcd")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.ServingCert("server", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.ClientCert("virt-api-etcd-client", "virt-api")
	if err != nil {
		t.Fatal(err)
	}
	server, err := etcd.Start(etcd.Config{
		Dir:           filepath.Join(dir, "data"),
		UnsafeNoFsync: true,
		ClientTLS:     &etcd.TLSFiles{CertFile: serving.CertFile, KeyFile: serving.KeyFile, TrustedCAFile: ca.CertFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	return &TLSEtcd{URL: server.ClientURL, CA: ca, Client: client}
}
