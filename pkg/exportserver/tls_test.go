package exportserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeKeyPair writes a new self-signed certificate for 127.0.0.1 with serial and its key
// to dir's tls.crt and tls.key, each replaced by a rename as a rotation replaces them.
func writeKeyPair(t *testing.T, dir string, serial int64) *x509.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "virt-export-test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	replace := func(name string, block *pem.Block) {
		tmp := filepath.Join(dir, name+".tmp")
		require.NoError(t, os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
	}
	replace("tls.crt", &pem.Block{Type: "CERTIFICATE", Bytes: der})
	replace("tls.key", &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return cert
}

// TestTLSReload serves over the TLS configuration and rotates its key pair under it: the
// next connection gets the new certificate, with no restart.
func TestTLSReload(t *testing.T) {
	dir := t.TempDir()
	first := writeKeyPair(t, dir, 1)
	cfg, err := NewTLSConfig(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	require.NoError(t, err)

	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	serialOf := func(trust *x509.Certificate, maxVersion uint16) (int64, error) {
		pool := x509.NewCertPool()
		pool.AddCert(trust)
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: maxVersion})
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
	}

	serial, err := serialOf(first, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), serial)

	second := writeKeyPair(t, dir, 2)
	serial, err = serialOf(second, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(2), serial)

	// A key that does not match the certificate (a rotation half done) keeps the last pair.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), []byte("garbage"), 0o600))
	serial, err = serialOf(second, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(2), serial)

	assert.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)
	_, err = serialOf(second, tls.VersionTLS11)
	assert.Error(t, err, "TLS 1.1 is refused")
}

func TestNewTLSConfigNeedsAPair(t *testing.T) {
	dir := t.TempDir()
	_, err := NewTLSConfig(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	assert.Error(t, err)
}
