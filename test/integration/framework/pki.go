package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hangarvm/hangar/pkg/migration/identity"
)

// CA is a test certificate authority that writes what it issues as PEM files in a directory.
type CA struct {
	dir  string
	name string
	cert *x509.Certificate
	key  crypto.Signer
	// CertFile is the CA certificate's path.
	CertFile string
	// PEM is the CA certificate.
	PEM []byte
}

// KeyPair is an issued certificate and its key on disk.
type KeyPair struct {
	CertFile, KeyFile string
	CertPEM, KeyPEM   []byte
}

// NewCA creates a CA named name whose files go to dir.
func NewCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{dir: dir, name: name, cert: cert, key: key,
		CertFile: filepath.Join(dir, name+"-ca.crt"),
		PEM:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	return ca, os.WriteFile(ca.CertFile, ca.PEM, 0o600)
}

// ServingCert issues a server certificate for the given names and addresses.
func (ca *CA) ServingCert(file string, dnsNames []string, ips []net.IP) (*KeyPair, error) {
	return ca.issue(file, pkix.Name{CommonName: dnsNames[0]}, x509.ExtKeyUsageServerAuth, dnsNames, ips)
}

// NodeIdentity issues node's identity as virt-controller's signer does (package
// migration/identity): the certificate a virt-handler serves virt-api with.
func (ca *CA) NodeIdentity(file, node string) (*KeyPair, error) {
	req := identity.Template(node)
	return ca.issue(file, req.Subject, x509.ExtKeyUsageServerAuth, req.DNSNames, nil)
}

// ClientCert issues a client certificate; Kubernetes reads the user from CN and groups from O.
func (ca *CA) ClientCert(file, user string, groups ...string) (*KeyPair, error) {
	return ca.issue(file, pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (ca *CA) issue(file string, subject pkix.Name, usage x509.ExtKeyUsage, dnsNames []string, ips []net.IP) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", file, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	kp := &KeyPair{
		CertFile: filepath.Join(ca.dir, file+".crt"),
		KeyFile:  filepath.Join(ca.dir, file+".key"),
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	if err := os.WriteFile(kp.CertFile, kp.CertPEM, 0o600); err != nil {
		return nil, err
	}
	return kp, os.WriteFile(kp.KeyFile, kp.KeyPEM, 0o600)
}

// writeServiceAccountKey writes an RSA key pair for signing service-account tokens.
func writeServiceAccountKey(dir string) (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", err
	}
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return "", "", err
	}
	return keyFile, pubFile, os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600)
}
