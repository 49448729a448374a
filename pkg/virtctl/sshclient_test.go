package virtctl

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// fakeGuest is an SSH server behind a fake port-forward endpoint: the paths virt-api serves,
// upgraded with KubeVirt's subprotocol, each connection handed to the server. It runs `echo`,
// `exit N`, and the scp protocol's two ends on files it keeps in memory.
type fakeGuest struct {
	t       *testing.T
	server  *httptest.Server
	config  *ssh.ServerConfig
	hostKey ssh.Signer

	mu    sync.Mutex
	paths []string
	files map[string]string
}

func newFakeGuest(t *testing.T, clientKey ssh.PublicKey) *fakeGuest {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	hostKey, err := ssh.NewSignerFromKey(hostPriv)
	require.NoError(t, err)
	g := &fakeGuest{t: t, hostKey: hostKey, files: map[string]string{"/etc/motd": "welcome\n"}}
	g.config = &ssh.ServerConfig{PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if meta.User() == "root" && string(key.Marshal()) == string(clientKey.Marshal()) {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown key for %s", meta.User())
	}}
	g.config.AddHostKey(hostKey)
	upgrader := gwebsocket.Upgrader{Subprotocols: []string{streamSubprotocol}}
	g.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.paths = append(g.paths, r.URL.Path)
		g.mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/portforward/22/tcp") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"port 2200/tcp of the guest: connection refused","code":502}`)
			return
		}
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		go g.serve(newWSConn(ws))
	}))
	t.Cleanup(g.server.Close)
	return g
}

func (g *fakeGuest) serve(conn net.Conn) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, g.config)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range requests {
				if req.Type != "exec" {
					_ = req.Reply(false, nil)
					continue
				}
				_ = req.Reply(true, nil)
				command := string(req.Payload[4:])
				status := g.run(command, ch)
				_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
				return
			}
		}()
	}
}

func (g *fakeGuest) run(command string, ch ssh.Channel) uint32 {
	r := bufio.NewReader(ch)
	switch {
	case strings.HasPrefix(command, "echo "):
		fmt.Fprintln(ch, strings.TrimPrefix(command, "echo "))
		return 0
	case strings.HasPrefix(command, "exit "):
		var n uint32
		fmt.Sscan(strings.TrimPrefix(command, "exit "), &n)
		return n
	case strings.HasPrefix(command, "scp -t "):
		dir := strings.Trim(strings.TrimPrefix(command, "scp -t "), "'")
		_, _ = ch.Write([]byte{0})
		line, _ := r.ReadString('\n')
		var mode, name string
		var size int
		fmt.Sscanf(line, "C%s %d %s", &mode, &size, &name)
		_, _ = ch.Write([]byte{0})
		data := make([]byte, size+1)
		_, _ = io.ReadFull(r, data)
		g.mu.Lock()
		g.files[dir+"/"+name] = string(data[:size])
		g.mu.Unlock()
		_, _ = ch.Write([]byte{0})
		return 0
	case strings.HasPrefix(command, "scp -f "):
		path := strings.Trim(strings.TrimPrefix(command, "scp -f "), "'")
		g.mu.Lock()
		data, ok := g.files[path]
		g.mu.Unlock()
		_, _ = r.ReadByte()
		if !ok {
			fmt.Fprintf(ch, "\x01scp: %s: No such file or directory\n", path)
			return 1
		}
		fmt.Fprintf(ch, "C0644 %d %s\n", len(data), filepath.Base(path))
		_, _ = r.ReadByte()
		_, _ = io.WriteString(ch, data)
		_, _ = ch.Write([]byte{0})
		_, _ = r.ReadByte()
		return 0
	}
	fmt.Fprintf(ch.Stderr(), "%s: command not found\n", command)
	return 127
}

// clientKey writes a new key to dir/id and returns its public half.
func clientKey(t *testing.T, dir string) (string, ssh.PublicKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	path := filepath.Join(dir, "id")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return path, signer.PublicKey()
}

// pointAt makes the test CLI's kubeconfig name the fake guest's server.
func (tc *testCLI) pointAt(t *testing.T, server string) {
	t.Helper()
	require.NoError(t, os.WriteFile(tc.kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: ctx-ns}}]
current-context: x
`), 0o600))
}

// TestNativeSSH: the built-in client reaches the guest through portforward/22/tcp of the
// target, runs commands and passes their exit status on, keeps the host key on first use
// and refuses a changed one, and copies files both ways.
func TestNativeSSH(t *testing.T) {
	cli := newTestCLI(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	keyFile, pub := clientKey(t, cli.home)
	guest := newFakeGuest(t, pub)
	cli.pointAt(t, guest.server.URL)
	knownHosts := filepath.Join(cli.home, "known_hosts")

	require.NoError(t, cli.run(t, "ssh", "-i", keyFile, "--known-hosts", knownHosts, "root@vm/demo", "-c", "echo hello"))
	assert.Equal(t, "hello\n", cli.out.String())
	assert.Equal(t, "/apis/subresources.kubevirt.io/v1/namespaces/ctx-ns/virtualmachines/demo/portforward/22/tcp", guest.paths[0])
	assert.Contains(t, cli.errOut.String(), "permanently added vm.demo.ctx-ns:22")
	known, err := os.ReadFile(knownHosts)
	require.NoError(t, err)
	assert.Contains(t, string(known), "vm.demo.ctx-ns")

	err = cli.run(t, "ssh", "-i", keyFile, "--known-hosts", knownHosts, "root@vmi/demo/other", "-c", "exit 3")
	assert.Equal(t, exitCode(3), err, "the remote status is virtctl's")
	assert.Equal(t, "/apis/subresources.kubevirt.io/v1/namespaces/other/virtualmachineinstances/demo/portforward/22/tcp", guest.paths[1])

	err = cli.run(t, "ssh", "-i", keyFile, "--known-hosts", knownHosts, "bob@vm/demo", "-c", "echo hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unable to authenticate")

	err = cli.run(t, "ssh", "-i", keyFile, "--known-hosts", knownHosts, "-p", "2200", "root@vm/demo", "-c", "echo hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connection refused", "a port nothing listens on says so")

	err = cli.run(t, "ssh", "-i", filepath.Join(cli.home, "missing"), "--known-hosts", knownHosts, "root@vm/demo", "-c", "echo hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "identity file")

	// Files there and back with the built-in scp.
	local := filepath.Join(cli.home, "payload.txt")
	require.NoError(t, os.WriteFile(local, []byte("some bytes\n"), 0o644))
	require.NoError(t, cli.run(t, "scp", "--local-ssh=false", "-i", keyFile, "--known-hosts", knownHosts, local, "root@vm/demo:/tmp"))
	assert.Equal(t, "some bytes\n", guest.files["/tmp/payload.txt"])
	back := filepath.Join(cli.home, "back.txt")
	require.NoError(t, cli.run(t, "scp", "--local-ssh=false", "-i", keyFile, "--known-hosts", knownHosts, "root@vm/demo:/tmp/payload.txt", back))
	data, err := os.ReadFile(back)
	require.NoError(t, err)
	assert.Equal(t, "some bytes\n", string(data))
	err = cli.run(t, "scp", "--local-ssh=false", "-i", keyFile, "--known-hosts", knownHosts, "root@vm/demo:/nope", back)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "No such file")

	// Another guest key under the same name: refused.
	other := newFakeGuest(t, pub)
	cli.pointAt(t, other.server.URL)
	err = cli.run(t, "ssh", "-i", keyFile, "--known-hosts", knownHosts, "root@vm/demo", "-c", "echo hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "host key of vm.demo.ctx-ns:22 has changed")
}

// TestPortForwardStdio: --stdio joins standard input and output to the forwarded port.
func TestPortForwardStdio(t *testing.T) {
	cli := newTestCLI(t)
	upgrader := gwebsocket.Upgrader{Subprotocols: []string{streamSubprotocol}}
	var path string
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		conn := newWSConn(ws)
		defer conn.Close()
		data, _ := io.ReadAll(io.LimitReader(conn, 5))
		_, _ = conn.Write([]byte(strings.ToUpper(string(data))))
	}))
	t.Cleanup(server.Close)
	cli.pointAt(t, server.URL)
	require.NoError(t, cli.runWithInput(t, "hello", "port-forward", "--stdio=true", "vmi/demo/ns1", "udp/53"))
	assert.Equal(t, "HELLO", cli.out.String())
	assert.Equal(t, "/apis/subresources.kubevirt.io/v1/namespaces/ns1/virtualmachineinstances/demo/portforward/53/udp", path)
}
