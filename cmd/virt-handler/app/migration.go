package app

import (
	"crypto/tls"
	"crypto/x509"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"

	"github.com/hangarvm/hangar/pkg/migration/identity"
)

// migrationIdentity is the certificate manager of this node's migration identity: a key of
// its own, the certificate from virt-controller's signer, renewed before it expires. Both
// live in memory only: a restarted handler asks again.
func migrationIdentity(kube kubernetes.Interface, node string) (certificate.Manager, error) {
	return certificate.NewManager(&certificate.Config{
		ClientsetFn:      func(*tls.Certificate) (kubernetes.Interface, error) { return kube, nil },
		Template:         identity.Template(node),
		SignerName:       identity.SignerName,
		Usages:           identity.Usages,
		CertificateStore: &memoryStore{},
		Name:             "migration",
	})
}

// memoryStore keeps the identity in memory (certificate.Store).
type memoryStore struct {
	mu   sync.Mutex
	cert *tls.Certificate
}

func (s *memoryStore) Current() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert == nil {
		e := certificate.NoCertKeyError("no migration identity yet")
		return nil, &e
	}
	return s.cert, nil
}

func (s *memoryStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cert = &c
	return s.cert, nil
}
