package handler

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/hangarvm/hangar/pkg/migration/identity"
)

// MigrationTLS is this node's migration identity (package migration/identity) and the CA
// every node's is issued by: handlers carry migration streams to each other only over TLS
// 1.3 with both ends' identities verified.
type MigrationTLS struct {
	// Node is this node.
	Node string
	// Certificate is the current identity (the certificate manager's), nil until issued.
	Certificate func() *tls.Certificate
	// CAFile is the migration CA's certificate, read at every handshake so that a rotated
	// bundle applies without a restart.
	CAFile string
}

func (m *MigrationTLS) pool() (*x509.CertPool, error) {
	pem, err := os.ReadFile(m.CAFile)
	if err != nil {
		return nil, fmt.Errorf("migration CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("migration CA %s: no certificate", m.CAFile)
	}
	return pool, nil
}

func (m *MigrationTLS) current() (*tls.Certificate, error) {
	if c := m.Certificate(); c != nil {
		return c, nil
	}
	return nil, errors.New("this node has no migration identity yet")
}

// ServerConfig admits only peers with a migration identity; which node may do what is
// checked per connection (peerNode).
func (m *MigrationTLS) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			pool, err := m.pool()
			if err != nil {
				return nil, err
			}
			return &tls.Config{
				MinVersion: tls.VersionTLS13,
				ClientAuth: tls.RequireAndVerifyClientCert,
				ClientCAs:  pool,
				GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
					return m.current()
				},
			}, nil
		},
	}
}

// Dial reaches node's handler at address and checks that it is that node's.
func (m *MigrationTLS) Dial(ctx context.Context, address, node string) (*tls.Conn, error) {
	pool, err := m.pool()
	if err != nil {
		return nil, err
	}
	d := tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second},
		Config: &tls.Config{
			MinVersion: tls.VersionTLS13,
			RootCAs:    pool,
			ServerName: node, // the identity's only DNS name
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return m.current()
			},
		},
	}
	c, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("migration proxy of node %s at %s: %w", node, address, err)
	}
	conn := c.(*tls.Conn)
	if got, err := peerNode(conn); err != nil || got != node {
		conn.Close()
		return nil, fmt.Errorf("migration proxy at %s is not node %s's (%q, %v)", address, node, got, err)
	}
	return conn, nil
}

// peerNode is the node a handshaken connection's verified peer certificate names.
func peerNode(c *tls.Conn) (string, error) {
	certs := c.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "", errors.New("no peer certificate")
	}
	return identity.NodeOf(certs[0])
}
