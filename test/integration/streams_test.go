package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	"github.com/hangarvm/hangar/pkg/handler"
	launcherapi "github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/nodeclient"
	"github.com/hangarvm/hangar/pkg/virtapi"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// nodeAgent is a real virt-handler server (pkg/handler) over mutual TLS, with instances'
// sockets in a directory the test fills.
type nodeAgent struct {
	socketDir string
	server    *httptest.Server
	handlers  nodeclient.Config
}

// newNodeAgent makes the agent's PKI and address; serve starts it once virt-api runs.
func newNodeAgent(t *testing.T) *nodeAgent {
	t.Helper()
	dir := t.TempDir()
	ca, err := framework.NewCA(dir, "node")
	require.NoError(t, err)
	serving, err := ca.ServingCert("virt-handler", []string{nodeclient.ServerName}, nil)
	require.NoError(t, err)
	client, err := ca.ClientCert("virt-api-client", "virt-api")
	require.NoError(t, err)
	tlsConfig, err := handler.TLSConfig(serving.CertFile, serving.KeyFile, ca.CertFile)
	require.NoError(t, err)

	// Unix socket paths are limited to 108 bytes: keep the directory short.
	sockets, err := os.MkdirTemp("", "agent")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockets) })
	agent := &nodeAgent{socketDir: sockets, server: httptest.NewUnstartedServer(nil)}
	agent.server.TLS = tlsConfig
	agent.handlers = nodeclient.Config{StaticAddress: "https://" + agent.server.Listener.Addr().String(),
		CAFile: ca.CertFile, CertFile: client.CertFile, KeyFile: client.KeyFile}
	return agent
}

// serve starts the handler server, reading instances through client as virt-handler does.
func (a *nodeAgent) serve(t *testing.T, client versioned.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informers := externalversions.NewSharedInformerFactory(client, 0)
	lister := informers.Kubevirt().V1().VirtualMachineInstances().Lister()
	informers.Start(ctx.Done())
	informers.WaitForCacheSync(ctx.Done())
	a.server.Config.Handler = (&handler.Server{Lister: lister, SocketDir: a.socketDir, AllowedNames: []string{"virt-api"}}).Handler()
	a.server.StartTLS()
	t.Cleanup(a.server.Close)
}

// fakeConsole serves an instance's console socket: a banner, then an echo of every line.
func (a *nodeAgent) fakeConsole(t *testing.T, uid string) {
	t.Helper()
	dir := filepath.Join(a.socketDir, uid)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	l, err := net.Listen("unix", filepath.Join(dir, launcherapi.ConsoleSocketName))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_, _ = conn.Write([]byte("HANGAR-GUEST-READY\r\n"))
				lines := bufio.NewScanner(conn)
				for lines.Scan() {
					_, _ = conn.Write([]byte("echo: " + lines.Text() + "\r\n"))
				}
			}()
		}
	}()
}

// dialStream opens a stream of an instance through virt-api as virtctl does.
func dialStream(t *testing.T, server *framework.VirtAPI, path string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(server.Config.CAData))
	dialer := websocket.Dialer{
		TLSClientConfig:  &tls.Config{RootCAs: pool, ServerName: server.Config.TLSClientConfig.ServerName},
		Subprotocols:     []string{"plain.kubevirt.io"},
		HandshakeTimeout: 10 * time.Second,
	}
	header := http.Header{"Authorization": []string{"Bearer " + server.Config.BearerToken}}
	return dialer.Dial(strings.Replace(server.Config.Host, "https://", "wss://", 1)+path, header)
}

func readUntil(t *testing.T, ws *websocket.Conn, want string) string {
	t.Helper()
	var seen strings.Builder
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(10*time.Second)))
	for !strings.Contains(seen.String(), want) {
		kind, data, err := ws.ReadMessage()
		require.NoError(t, err, "waiting for %q, saw %q", want, seen.String())
		assert.Equal(t, websocket.BinaryMessage, kind, "raw bytes travel as binary messages")
		seen.Write(data)
	}
	return seen.String()
}

func TestConsoleThroughVirtAPI(t *testing.T) {
	ctx := context.Background()
	agent := newNodeAgent(t)
	server := framework.StartVirtAPIWith(t, func(o *virtapi.Options) { o.Handlers = agent.handlers })
	agent.serve(t, server.Client)

	ns := "streams"
	vmis := server.Client.KubevirtV1().VirtualMachineInstances(ns)
	vmi, err := vmis.Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	require.NoError(t, err)
	agent.fakeConsole(t, string(vmi.UID))

	// Not running yet: KubeVirt's answer is a 400.
	_, resp, err := dialStream(t, server, "/apis/subresources.kubevirt.io/v1/namespaces/"+ns+"/virtualmachineinstances/guest/console")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
	_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the agent's cache sees the instance run
		ws, _, err := dialStream(t, server, "/apis/kubevirt.io/v1/namespaces/"+ns+"/virtualmachineinstances/guest/console")
		if err == nil {
			ws.Close()
		}
		return err == nil
	}, 10*time.Second, 100*time.Millisecond)

	for _, path := range []string{
		"/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/guest/console",
		"/apis/kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/guest/console",
	} {
		t.Run(path, func(t *testing.T) {
			ws, resp, err := dialStream(t, server, path)
			require.NoError(t, err)
			defer ws.Close()
			assert.Equal(t, "plain.kubevirt.io", resp.Header.Get("Sec-Websocket-Protocol"), "the offered subprotocol is echoed")
			readUntil(t, ws, "HANGAR-GUEST-READY")
			require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte("hello\r\n")))
			readUntil(t, ws, "echo: hello")
			require.NoError(t, ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second)))
		})
	}

	// No VNC socket on this guest: the node's 404 reaches the client.
	_, resp, err = dialStream(t, server, "/apis/subresources.kubevirt.io/v1/namespaces/"+ns+"/virtualmachineinstances/guest/vnc")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestGuestCommandsCheckTheInstance(t *testing.T) {
	ctx := context.Background()
	ns := "commands"
	vmis := api.Client.KubevirtV1().VirtualMachineInstances(ns)
	vmi, err := vmis.Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	require.NoError(t, err)
	put := func(path, call, body string) int {
		var code int
		api.Client.Discovery().RESTClient().Put().AbsPath(path + "/namespaces/" + ns + "/virtualmachineinstances/guest/" + call).
			Body([]byte(body)).Do(ctx).StatusCode(&code)
		return code
	}
	for _, path := range []string{"/apis/subresources.kubevirt.io/v1", "/apis/kubevirt.io/v1"} {
		assert.Equal(t, http.StatusConflict, put(path, "pause", ""), "pause needs a running instance")
		assert.Equal(t, http.StatusConflict, put(path, "unpause", ""), "unpause needs a paused instance")
		assert.Equal(t, http.StatusConflict, put(path, "softreboot", ""), "softreboot needs a running instance")
	}
	vmi.Status.Phase = v1.Running
	_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, put("/apis/subresources.kubevirt.io/v1", "pause", `{"dryRun":["All"]}`), "a dry run checks and stops there")
	assert.Equal(t, http.StatusConflict, put("/apis/subresources.kubevirt.io/v1", "unpause", `{"dryRun":["All"]}`))
	assert.Equal(t, http.StatusServiceUnavailable, put("/apis/subresources.kubevirt.io/v1", "pause", ""),
		"a standalone virt-api has no node to send the command to")
}
