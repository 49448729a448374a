// Command etcdprobe tries, from wherever it runs, what any pod could try against Hangar's
// etcd without its credentials: a TLS connection without a client certificate, and one with
// a certificate of a CA of its own, each followed by a request to etcd's JSON API for every
// key under /hangar/. The e2e tests run it in a pod of a user namespace (busybox's wget
// cannot speak TLS) and read one line per attempt:
//
//	ADDRESS ATTEMPT server=CN-of-etcd's-certificate refused=ERROR
//	ADDRESS ATTEMPT server=CN answered=HTTP-STATUS-LINE
package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// rangeAll asks etcd's gRPC gateway for every key under /hangar/ (keys base64-encoded).
const rangeAll = `{"key":"L2hhbmdhci8=","range_end":"L2hhbmdhcjA=","keys_only":true}`

func main() {
	forged, err := selfSignedClientCert("virt-api")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	attempts := []struct {
		name string
		cert *tls.Certificate
	}{{"no-certificate", nil}, {"foreign-ca", forged}}
	for _, addr := range os.Args[1:] {
		for _, a := range attempts {
			fmt.Println(addr, a.name, attempt(addr, a.cert))
		}
	}
}

func attempt(addr string, cert *tls.Certificate) string {
	config := &tls.Config{
		// An attacker has no CA to check etcd with; the line reports whom it reached.
		InsecureSkipVerify: true, //nolint:gosec
		// Offered whatever CAs etcd asks for.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		},
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, config)
	if err != nil {
		return "server=none refused=" + err.Error()
	}
	defer conn.Close()
	server := "server=unknown"
	if certs := conn.ConnectionState().PeerCertificates; len(certs) > 0 {
		server = "server=" + certs[0].Subject.CommonName
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = fmt.Fprintf(conn, "POST /v3/kv/range HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, len(rangeAll), rangeAll)
	if err != nil {
		return server + " refused=" + err.Error()
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return server + " refused=" + err.Error()
	}
	return server + " answered=" + status
}

// selfSignedClientCert is a client certificate of a CA nobody trusts, with a name etcd's
// clients have.
func selfSignedClientCert(name string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign a client certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
