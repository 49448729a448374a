package handler

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/pkg/migration/identity"
	"github.com/hangarvm/hangar/pkg/migration/tunnel"
)

// migrationCA issues migration identities as virt-controller's signer would.
type migrationCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
}

func newMigrationCA(t *testing.T) *migrationCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "migration-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	return &migrationCA{cert: cert, key: key, file: file}
}

// identity is node's migration identity, with ca as the trusted bundle.
func (ca *migrationCA) identity(t *testing.T, node string, trust *migrationCA) *MigrationTLS {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	req := identity.Template(node)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: req.Subject, DNSNames: req.DNSNames,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	cert := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &MigrationTLS{Node: node, Certificate: func() *tls.Certificate { return cert }, CAFile: trust.file}
}

// migrationTargetNode is node-b's handler with one instance migrating to it from node-a,
// whose target launcher echoes the memory stream.
func migrationTargetNode(t *testing.T, ca *migrationCA) (addr string, vmiUID types.UID) {
	pods := newTestPods(t)
	vmiUID = "vmi-1"
	podUID := testPodUID("target")
	dir := filepath.Join(pods.dir, string(podUID), "volumes", "kubernetes.io~empty-dir", layout.SocketVolume)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ln := listenUnix(t, filepath.Join(dir, tunnel.SocketName))
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				verb, stream, err := tunnel.ReadLine(c)
				if err != nil || verb != tunnel.VerbTarget || stream != string(tunnel.StreamMemory) {
					_ = tunnel.WriteLine(c, tunnel.AnswerError, "unexpected")
					return
				}
				_ = tunnel.WriteLine(c, tunnel.AnswerOK)
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	sockets, err := pods.root.Dir(podUID, layout.SocketVolume)
	require.NoError(t, err)
	c := &Controller{
		cfg: Config{NodeName: "node-b", Migration: ca.identity(t, "node-b", ca)},
		targets: map[string]*migrationTarget{"ns/vm": {
			vmiUID: vmiUID, launcher: newLauncher("ns/vm", vmiUID, sockets, nil), prepared: "m-1",
			state: &v1.VirtualMachineInstanceMigrationState{MigrationUid: "m-1", SourceNode: "node-a", TargetNode: "node-b"},
		}},
		outgoing: map[string]*outgoingMigration{},
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.ServeMigrations(ctx, tcp) }()
	return tcp.Addr().String(), vmiUID
}

func TestMigrationProxyCarriesOnlyTheSourcesStreams(t *testing.T) {
	ca := newMigrationCA(t)
	addr, vmiUID := migrationTargetNode(t, ca)
	other := newMigrationCA(t)
	tests := []struct {
		name    string
		source  *MigrationTLS
		args    []string
		wantErr string
	}{
		{name: "the source node", source: ca.identity(t, "node-a", ca), args: []string{verbStream, "m-1", string(vmiUID), "memory"}},
		{name: "another node of the cluster", source: ca.identity(t, "node-evil", ca), args: []string{verbStream, "m-1", string(vmiUID), "memory"},
			wantErr: `comes from node "node-a", not "node-evil"`},
		{name: "another migration", source: ca.identity(t, "node-a", ca), args: []string{verbStream, "m-2", string(vmiUID), "memory"},
			wantErr: "no such migration"},
		{name: "another instance", source: ca.identity(t, "node-a", ca), args: []string{verbStream, "m-1", "vmi-2", "memory"},
			wantErr: "no such migration"},
		{name: "an unknown stream", source: ca.identity(t, "node-a", ca), args: []string{verbStream, "m-1", string(vmiUID), "shell"},
			wantErr: "unknown migration stream"},
		{name: "the source node's name from another CA", source: other.identity(t, "node-a", ca), args: []string{verbStream, "m-1", string(vmiUID), "memory"},
			wantErr: "certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{cfg: Config{NodeName: "node-a", Migration: tc.source}}
			conn, err := c.dialTarget(context.Background(), addr, "node-b", tc.args...)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write([]byte("page 1\n"))
			require.NoError(t, err)
			line, err := bufio.NewReader(conn).ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, "page 1\n", line)
		})
	}
}

func TestMigrationProxyRefusesAClientWithoutIdentity(t *testing.T) {
	ca := newMigrationCA(t)
	addr, _ := migrationTargetNode(t, ca)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "node-b", MinVersion: tls.VersionTLS13})
	if err == nil {
		// TLS 1.3: the server's refusal of the (missing) client certificate comes with the
		// first read.
		_ = tunnel.WriteLine(conn, verbProbe, "m-1", "vmi-1")
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	require.Error(t, err)
}

func TestSourceRefusesATargetThatIsAnotherNode(t *testing.T) {
	ca := newMigrationCA(t)
	addr, vmiUID := migrationTargetNode(t, ca) // node-b's
	c := &Controller{cfg: Config{NodeName: "node-a", Migration: ca.identity(t, "node-a", ca)}}
	// The address says node-c (a forged targetNodeAddress, say): node-b's handler answers.
	_, err := c.dialTarget(context.Background(), addr, "node-c", verbProbe, "m-1", string(vmiUID))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node-c")
}
