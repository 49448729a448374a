package handler

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForwardAddress(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"10.244.1.7", true},
		{"192.168.5.20", true},
		{"fd00:10:244::7", true},
		{"127.0.0.1", false},
		{"::1", false},
		{"0.0.0.0", false},
		{"169.254.169.254", false}, // a cloud's metadata service
		{"fe80::1", false},
		{"224.0.0.1", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := forwardAddress(netip.MustParseAddr(tc.addr))
			assert.Equal(t, tc.ok, err == nil, "%v", err)
		})
	}
	assert.Error(t, forwardAddress(netip.Addr{}))
}

// loopbackOnly admits the test's own listeners.
func loopbackOnly(addr netip.Addr) error {
	if !addr.IsLoopback() {
		return fmt.Errorf("%s: the test dials its loopback only", addr)
	}
	return nil
}

func portForwardURL(srv string, vmi string, port int, protocol, address string) string {
	return fmt.Sprintf("%s/v1/namespaces/ns/virtualmachineinstances/%s/portforward/%d/%s?address=%s", srv, vmi, port, protocol, address)
}

func TestPortForwardTCP(t *testing.T) {
	srv, ca := serverFixtureWith(t, func(s *Server) { s.ForwardAddress = loopbackOnly })
	cert := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)

	// The guest's port: an echo that says which end it is.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("guest:"))
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port

	ws, resp, err := dialer(ca, &cert).Dial(portForwardURL(wsURL(srv, ""), "guest", port, "tcp", "127.0.0.1"), nil)
	require.NoError(t, err)
	assert.Equal(t, "plain.kubevirt.io", resp.Header.Get("Sec-Websocket-Protocol"))
	defer ws.Close()
	require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte("ping")))
	var got string
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(5*time.Second)))
	for len(got) < len("guest:ping") {
		_, b, err := ws.ReadMessage()
		require.NoError(t, err)
		got += string(b)
	}
	assert.Equal(t, "guest:ping", got)
}

func TestPortForwardUDPKeepsDatagrams(t *testing.T) {
	srv, ca := serverFixtureWith(t, func(s *Server) { s.ForwardAddress = loopbackOnly })
	cert := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)

	// The guest's port: answers each datagram with its length and itself.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, maxDatagram)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte(strconv.Itoa(n)+":"), buf[:n]...), from)
		}
	}()
	port := pc.LocalAddr().(*net.UDPAddr).Port

	ws, _, err := dialer(ca, &cert).Dial(portForwardURL(wsURL(srv, ""), "guest", port, "udp", "127.0.0.1"), nil)
	require.NoError(t, err)
	defer ws.Close()
	big := make([]byte, 40000) // more than a stream bridge's buffer: still one datagram
	for _, d := range [][]byte{[]byte("one"), []byte("two"), big} {
		require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, d))
		require.NoError(t, ws.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, b, err := ws.ReadMessage()
		require.NoError(t, err)
		assert.Equal(t, append([]byte(strconv.Itoa(len(d))+":"), d...), b)
	}
}

func TestPortForwardRefusals(t *testing.T) {
	srv, ca := serverFixtureWith(t, func(s *Server) { s.ForwardAddress = loopbackOnly })
	cert := ca.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	// A port nothing listens on: a listener closed again.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{cert}}}}
	for _, tc := range []struct {
		name, url string
		code      int
		says      string
	}{
		{"nothing listens", portForwardURL(srv.URL, "guest", closedPort, "tcp", "127.0.0.1"), http.StatusBadGateway, "connection refused"},
		{"port 0", portForwardURL(srv.URL, "guest", 0, "tcp", "127.0.0.1"), http.StatusBadRequest, "between 1 and 65535"},
		{"port too large", portForwardURL(srv.URL, "guest", 65536, "tcp", "127.0.0.1"), http.StatusBadRequest, "between 1 and 65535"},
		{"unknown protocol", portForwardURL(srv.URL, "guest", 22, "sctp", "127.0.0.1"), http.StatusBadRequest, "tcp or udp"},
		{"no address", portForwardURL(srv.URL, "guest", 22, "tcp", ""), http.StatusBadRequest, "address"},
		{"an address the node refuses", portForwardURL(srv.URL, "guest", 22, "tcp", "10.0.0.1"), http.StatusBadRequest, "loopback only"},
		{"no instance", portForwardURL(srv.URL, "missing", 22, "tcp", "127.0.0.1"), http.StatusNotFound, "no such instance"},
		{"not running", portForwardURL(srv.URL, "stopped", 22, "tcp", "127.0.0.1"), http.StatusConflict, "not Running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.Get(tc.url)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, tc.code, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), tc.says)
		})
	}

	// Without the test's override, the node refuses its own loopback.
	plain, plainCA := serverFixture(t)
	plainCert := plainCA.issue(t, "virt-api", x509.ExtKeyUsageClientAuth)
	plainClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: plainCA.pool, Certificates: []tls.Certificate{plainCert}}}}
	resp, err := plainClient.Get(portForwardURL(plain.URL, "guest", 22, "tcp", "127.0.0.1"))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
