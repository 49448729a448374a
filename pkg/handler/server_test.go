package handler

import (
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
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	listers "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// serverFixture is a handler server for one running instance whose console socket echoes
// upper-cased input and whose VNC socket greets like QEMU.
func serverFixture(t *testing.T) (*httptest.Server, *testCA) {
	pods := newTestPods(t)
	vmi := &v1.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.UID = "ns", "guest", "uid-s"
	vmi.Status.Phase = v1.Running
	vmi.Status.ActivePods = map[types.UID]string{testPodUID("s"): "node-a"}
	stopped := &v1.VirtualMachineInstance{}
	stopped.Namespace, stopped.Name, stopped.UID = "ns", "stopped", "uid-t"
	stopped.Status.Phase = v1.Succeeded
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, indexer.Add(vmi))
	require.NoError(t, indexer.Add(stopped))

	sockDir := pods.socketDir(vmi)
	require.NoError(t, os.MkdirAll(sockDir, 0o755))
	console := listenUnix(t, filepath.Join(sockDir, api.ConsoleSocketName))
	t.Cleanup(func() { console.Close() })
	go func() {
		for {
			c, err := console.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if strings.Contains(string(buf[:n]), "exit") {
						return // the guest side ends the stream
					}
					_, _ = c.Write([]byte(strings.ToUpper(string(buf[:n]))))
				}
			}()
		}
	}()
	serveHostileAgent(t, sockDir)
	vnc := listenUnix(t, filepath.Join(sockDir, api.VNCSocketName))
	t.Cleanup(func() { vnc.Close() })
	go func() {
		for {
			c, err := vnc.Accept()
			if err != nil {
				return
			}
			// A hostile display, as a tenant's launcher could offer: after the greeting, a
			// screenshot's handshake learns of a 65535x65535 framebuffer (17 GB as RGBA).
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("RFB 003.008\n"))
				if _, err := io.ReadFull(c, make([]byte, 12)); err != nil {
					return
				}
				_, _ = c.Write([]byte{1, 1})
				_, _ = io.ReadFull(c, make([]byte, 1))
				_, _ = c.Write([]byte{0, 0, 0, 0})
				_, _ = io.ReadFull(c, make([]byte, 1))
				_, _ = c.Write(append([]byte{0xff, 0xff, 0xff, 0xff}, make([]byte, 20)...))
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()

	ca := newTestCA(t)
	s := &Server{Lister: listers.NewVirtualMachineInstanceLister(indexer), Sockets: &Sockets{Pods: pods.root, NodeName: "node-a"}, AllowedNames: []string{"virt-api"}}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, "virt-handler", x509.ExtKeyUsageServerAuth)},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: ca.pool,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, ca
}

func dialer(ca *testCA, cert *tls.Certificate) *websocket.Dialer {
	cfg := &tls.Config{RootCAs: ca.pool}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &websocket.Dialer{TLSClientConfig: cfg, HandshakeTimeout: 5 * time.Second, Subprotocols: []string{"plain.kubevirt.io"}}
}

func wsURL(srv *httptest.Server, path string) string {
	return "wss" + strings.TrimPrefix(srv.URL, "https") + path
}

func TestConsoleWebsocket(t *testing.T) {
	srv, ca := serverFixture(t)
	cert := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	ws, resp, err := dialer(ca, &cert).Dial(wsURL(srv, "/v1/namespaces/ns/virtualmachineinstances/guest/console"), nil)
	require.NoError(t, err)
	assert.Equal(t, "plain.kubevirt.io", resp.Header.Get("Sec-Websocket-Protocol"))
	defer ws.Close()

	require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte("hello")))
	_, b, err := ws.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, "HELLO", string(b))

	// The guest side ends: the client gets a normal close.
	require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte("exit")))
	_, _, err = ws.ReadMessage()
	assert.True(t, websocket.IsCloseError(err, websocket.CloseNormalClosure), "got %v", err)
}

func TestVNCWebsocket(t *testing.T) {
	srv, ca := serverFixture(t)
	cert := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	ws, _, err := dialer(ca, &cert).Dial(wsURL(srv, "/v1/namespaces/ns/virtualmachineinstances/guest/vnc"), nil)
	require.NoError(t, err)
	defer ws.Close()
	_, b, err := ws.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, "RFB 003.008\n", string(b))
}

// TestScreenshotOfAHostileDisplay: the handler refuses the frame before allocating it.
func TestScreenshotOfAHostileDisplay(t *testing.T) {
	srv, ca := serverFixture(t)
	cert := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{cert}}}}
	resp, err := client.Get(srv.URL + "/v1/namespaces/ns/virtualmachineinstances/guest/vnc/screenshot")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	assert.Contains(t, string(body), "65535x65535 display")
}

func TestServerRefusals(t *testing.T) {
	srv, ca := serverFixture(t)
	other := ca.issue(t, "someone-else", x509.ExtKeyUsageClientAuth)
	_, resp, err := dialer(ca, &other).Dial(wsURL(srv, "/v1/namespaces/ns/virtualmachineinstances/guest/console"), nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	_, _, err = dialer(ca, nil).Dial(wsURL(srv, "/v1/namespaces/ns/virtualmachineinstances/guest/console"), nil)
	require.Error(t, err, "no client certificate, no TLS session")

	api := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	_, resp, err = dialer(ca, &api).Dial(wsURL(srv, "/v1/namespaces/ns/virtualmachineinstances/missing/console"), nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, resp, err = dialer(ca, &api).Dial(wsURL(srv, "/v1/namespaces/ns/virtualmachineinstances/stopped/console"), nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
}

func writeKeyPair(t *testing.T, dir, name string, cert tls.Certificate) (string, string) {
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

func TestTLSConfigReloadsRotatedFiles(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600))
	certFile, keyFile := writeKeyPair(t, dir, "serving", ca.issue(t, "first", x509.ExtKeyUsageServerAuth))

	cfg, err := TLSConfig(certFile, keyFile, caFile)
	require.NoError(t, err)
	first, err := cfg.GetConfigForClient(nil)
	require.NoError(t, err)
	assert.Equal(t, tls.RequireAndVerifyClientCert, first.ClientAuth)
	again, err := cfg.GetConfigForClient(nil)
	require.NoError(t, err)
	assert.Same(t, first, again, "unchanged files are not read again")

	writeKeyPair(t, dir, "serving", ca.issue(t, "second", x509.ExtKeyUsageServerAuth))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(certFile, later, later))
	rotated, err := cfg.GetConfigForClient(nil)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(rotated.Certificates[0].Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, "second", leaf.Subject.CommonName)

	_, err = TLSConfig(filepath.Join(dir, "missing.crt"), keyFile, caFile)
	assert.Error(t, err)
}

// The handler serves virt-api with its node's identity as the certificate manager has it now:
// none yet, no handshake; a renewed one, at once.
func TestNodeTLSConfigServesTheCurrentIdentity(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	caFile := filepath.Join(dir, "client-ca.crt")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600))
	var current atomic.Pointer[tls.Certificate]
	cfg, err := NodeTLSConfig(current.Load, caFile)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()
	client := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	get := func() (*http.Response, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{client}}}}
		return c.Get(srv.URL)
	}
	_, err = get()
	assert.Error(t, err, "no identity yet: no handshake")

	for _, cn := range []string{"first", "renewed"} {
		cert := ca.issue(t, cn, x509.ExtKeyUsageServerAuth)
		current.Store(&cert)
		resp, err := get()
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, cn, resp.TLS.PeerCertificates[0].Subject.CommonName)
	}
}
