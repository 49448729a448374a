package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
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

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	"github.com/hangarvm/hangar/pkg/handler"
	launcherapi "github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/pkg/nodeclient"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// nodeAgent is a real virt-handler server (pkg/handler) over mutual TLS, with instances'
// sockets in a directory the test fills.
type nodeAgent struct {
	podsDir  string
	pods     *podsockets.Root
	server   *httptest.Server
	handlers nodeclient.Config
}

// newNodeAgent makes the agent's PKI and address; serve starts it once virt-api runs.
func newNodeAgent(t *testing.T) *nodeAgent {
	t.Helper()
	dir := t.TempDir()
	ca, err := framework.NewCA(dir, "node")
	require.NoError(t, err)
	// The node's own identity: virt-api checks it names the node it dials.
	serving, err := ca.NodeIdentity("virt-handler", "node-a")
	require.NoError(t, err)
	client, err := ca.ClientCert("virt-api-client", "virt-api")
	require.NoError(t, err)
	tlsConfig, err := handler.TLSConfig(serving.CertFile, serving.KeyFile, ca.CertFile)
	require.NoError(t, err)

	// A kubelet-like pods directory; the fake launchers are this test process, which the
	// handler's peer check is told to accept (the real one, by pod cgroup, runs in test/node).
	podsDir := filepath.Join(dir, "pods")
	require.NoError(t, os.Mkdir(podsDir, 0o755))
	pods, err := podsockets.OpenRoot(podsDir)
	require.NoError(t, err)
	pods.Peers = testProcess{}
	t.Cleanup(func() { pods.Close() })
	agent := &nodeAgent{podsDir: podsDir, pods: pods, server: httptest.NewUnstartedServer(nil)}
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
	a.server.Config.Handler = (&handler.Server{Lister: lister, Sockets: &handler.Sockets{Pods: a.pods, NodeName: "node-a"}, AllowedNames: []string{"virt-api"}}).Handler()
	a.server.StartTLS()
	t.Cleanup(a.server.Close)
}

// launcherPod makes the socket volume of a launcher pod of vmi on node-a and records the pod
// in the instance's status as virt-controller would (the caller writes the status).
func (a *nodeAgent) launcherPod(t *testing.T, vmi *v1.VirtualMachineInstance) string {
	t.Helper()
	uid := types.UID(uuid.NewUUID())
	dir := filepath.Join(a.podsDir, string(uid), "volumes", "kubernetes.io~empty-dir", layout.SocketVolume)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	vmi.Status.ActivePods = map[types.UID]string{uid: "node-a"}
	return dir
}

// listenUnix listens on a socket at path, which may be longer than sun_path allows: it binds
// in a short directory and renames the socket into place, where it answers as well.
func listenUnix(t *testing.T, path string) net.Listener {
	t.Helper()
	short, err := os.MkdirTemp("", "s")
	require.NoError(t, err)
	defer os.RemoveAll(short)
	l, err := net.Listen("unix", filepath.Join(short, "s"))
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, os.Rename(filepath.Join(short, "s"), path))
	t.Cleanup(func() { l.Close() })
	return l
}

// testProcess admits the test process as the launcher pod's process.
type testProcess struct{}

func (testProcess) Verify(pid int, _ types.UID) error {
	if pid != os.Getpid() {
		return fmt.Errorf("process %d is not the test's", pid)
	}
	return nil
}

// fakeConsole serves the console socket of vmi's launcher pod: a banner, then an echo of
// every line.
func (a *nodeAgent) fakeConsole(t *testing.T, vmi *v1.VirtualMachineInstance) {
	t.Helper()
	l := listenUnix(t, filepath.Join(a.launcherPod(t, vmi), launcherapi.ConsoleSocketName))
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
	agent.fakeConsole(t, vmi)

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

// TestStreamLimits: consoles (and VNC displays, screenshots) open at once are bounded per
// instance and per user, with a 429 that says which; a stream closed frees its place.
func TestStreamLimits(t *testing.T) {
	ctx := context.Background()
	agent := newNodeAgent(t)
	server := framework.StartVirtAPIWith(t, func(o *virtapi.Options) {
		o.Handlers = agent.handlers
		o.StreamsPerUser, o.StreamsPerInstance = 3, 2
	})
	agent.serve(t, server.Client)
	ns := "stream-limits"
	vmis := server.Client.KubevirtV1().VirtualMachineInstances(ns)
	for _, name := range []string{"a", "b"} {
		vmi, err := vmis.Create(ctx, newVMI(name), metav1.CreateOptions{})
		require.NoError(t, err)
		agent.fakeConsole(t, vmi)
		vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
		_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	console := func(name string) string {
		return "/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/" + name + "/console"
	}
	open := func(name string) *websocket.Conn {
		t.Helper()
		var ws *websocket.Conn
		require.Eventually(t, func() bool { // the agent's cache sees the instance run
			var err error
			ws, _, err = dialStream(t, server, console(name))
			return err == nil
		}, 10*time.Second, 100*time.Millisecond)
		readUntil(t, ws, "HANGAR-GUEST-READY")
		return ws
	}
	refused := func(name, why string) {
		t.Helper()
		_, resp, err := dialStream(t, server, console(name))
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		body := make([]byte, 1024)
		n, _ := resp.Body.Read(body)
		assert.Contains(t, string(body[:n]), why)
	}

	first, second := open("a"), open("a")
	refused("a", "virtualmachineinstance "+ns+"/a has 2 consoles, VNC displays and screenshots open, the most one instance may")
	third := open("b")
	refused("b", "has 3 consoles, VNC displays and screenshots open, the most one user may")

	first.Close()
	again := open("a") // its place comes free once virt-api sees the client go
	for _, ws := range []*websocket.Conn{second, third, again} {
		ws.Close()
	}
}
