// Package pki is Hangar's public key infrastructure, which hangar-operator owns: four CAs of
// its own (virt-api and the handlers; etcd's client port; etcd's peer port; the nodes'
// migration identities), the certificates they issue, the bundles each consumer trusts, and
// their rotation before expiry. What to issue, keep or rotate is decided from the Secrets as
// they are and the time (Reconcile), without a cluster, so every step is table-tested.
package pki

import (
	"bytes"
	"crypto"
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
	"time"
)

// backdate is how far before now a certificate becomes valid: clocks of the nodes that check
// it may lag the operator's.
const backdate = 5 * time.Minute

// CA is a certificate authority: its certificate and key.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA makes a self-signed CA valid from now for lifetime.
func NewCA(commonName string, now time.Time, lifetime time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", commonName, now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return caFromDER(der, key)
}

func caFromDER(der []byte, key *ecdsa.PrivateKey) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: encode("CERTIFICATE", der), KeyPEM: encode("EC PRIVATE KEY", keyDER)}, nil
}

// ParseCA reads a CA from its certificate and key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, err
	}
	if len(certs) != 1 || !certs[0].IsCA {
		return nil, errors.New("not one CA certificate")
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM key")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey.Equal(certs[0].PublicKey) {
		return nil, errors.New("the key is not the certificate's")
	}
	return &CA{Cert: certs[0], Key: key, CertPEM: bytes.Clone(certPEM), KeyPEM: bytes.Clone(keyPEM)}, nil
}

// Leaf is what a certificate is for.
type Leaf struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	// Usages: x509.ExtKeyUsageServerAuth, ClientAuth or both.
	Usages []x509.ExtKeyUsage
}

// Issue makes a key and a certificate for leaf, valid from now for lifetime but never past
// the CA's own end.
func (ca *CA) Issue(leaf Leaf, now time.Time, lifetime time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: leaf.CommonName},
		DNSNames:     leaf.DNSNames,
		IPAddresses:  leaf.IPs,
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  leaf.Usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encode("CERTIFICATE", der), encode("EC PRIVATE KEY", keyDER), nil
}

// ParseCertificates reads every certificate of a PEM bundle.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

func encode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
