package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The cluster's PKI: every file is made only when missing, so a restarted cluster keeps its
// identities and the tokens signed with them. Keys are ECDSA P-256: fast to make, and every
// component (service-account signing with ES256 included) takes them.

const certValidity = 10 * 365 * 24 * time.Hour

// PKI makes certificates below dir.
type PKI struct{ Dir string }

// CertSpec describes a certificate.
type CertSpec struct {
	CommonName    string
	Organizations []string
	Server        bool // serverAuth, else clientAuth
	DNSNames      []string
	IPs           []net.IP
}

func (p PKI) path(name, ext string) string { return filepath.Join(p.Dir, name+"."+ext) }

// CertFile and KeyFile name a certificate's files.
func (p PKI) CertFile(name string) string { return p.path(name, "crt") }
func (p PKI) KeyFile(name string) string  { return p.path(name, "key") }

// CA makes the CA name unless it exists.
func (p PKI) CA(name, cn string) error {
	if exists(p.CertFile(name)) {
		return nil
	}
	key, err := p.key(name)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("CA %s: %w", name, err)
	}
	return writePEM(p.CertFile(name), "CERTIFICATE", der, 0o644)
}

// Cert makes the certificate name, signed by ca, unless it exists.
func (p PKI) Cert(name, ca string, spec CertSpec) error {
	if exists(p.CertFile(name)) {
		return nil
	}
	caCert, caKey, err := p.load(ca)
	if err != nil {
		return err
	}
	key, err := p.key(name)
	if err != nil {
		return err
	}
	usage := x509.ExtKeyUsageClientAuth
	if spec.Server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: spec.CommonName, Organization: spec.Organizations},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
		DNSNames:              spec.DNSNames,
		IPAddresses:           spec.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	return writePEM(p.CertFile(name), "CERTIFICATE", der, 0o644)
}

// ServiceAccountKeys makes the key pair that signs service-account tokens (sa.key, sa.pub).
func (p PKI) ServiceAccountKeys() error {
	pub := filepath.Join(p.Dir, "sa.pub")
	if exists(pub) {
		return nil
	}
	key, err := p.key("sa")
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(pub, "PUBLIC KEY", der, 0o644)
}

// key loads or makes the private key of name.
func (p PKI) key(name string) (*ecdsa.PrivateKey, error) {
	file := p.KeyFile(name)
	if b, err := os.ReadFile(file); err == nil {
		block, _ := pem.Decode(b)
		if block == nil {
			return nil, fmt.Errorf("%s: no PEM", file)
		}
		return x509.ParseECPrivateKey(block.Bytes)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return key, writePEM(file, "EC PRIVATE KEY", der, 0o600)
}

func (p PKI) load(name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(p.CertFile(name))
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, nil, fmt.Errorf("%s: no PEM", p.CertFile(name))
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := p.key(name)
	return cert, key, err
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// writePEM writes a PEM file atomically.
func writePEM(file, kind string, der []byte, mode os.FileMode) error {
	return writeFileAtomic(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode)
}

func writeFileAtomic(file string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
