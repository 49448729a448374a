//go:build kube

package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/virtctl"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// dialAs opens a websocket through kube-apiserver as user, as KubeVirt's clients do.
func dialAs(t *testing.T, c *framework.Cluster, user, path string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	cfg, err := c.UserConfig(user)
	require.NoError(t, err)
	tlsConfig, err := rest.TLSConfigFor(cfg)
	require.NoError(t, err)
	dialer := websocket.Dialer{TLSClientConfig: tlsConfig, Subprotocols: []string{"plain.kubevirt.io"}, HandshakeTimeout: 10 * time.Second}
	header := http.Header{}
	if cfg.BearerToken != "" {
		header.Set("Authorization", "Bearer "+cfg.BearerToken)
	}
	return dialer.Dial(strings.Replace(cfg.Host, "https://", "wss://", 1)+path, header)
}

// responseBody reads the body of a refused handshake.
func responseBody(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return string(b)
}

// TestPortForwardThroughKubeAPIServer: KubeVirt's portforward routes through kube-apiserver,
// the aggregation layer and virt-api to a real virt-handler server (the test plays the guest
// at the launcher pod's IP, which virt-api reads from the pod object): edit may forward, view
// may not, bad ports and protocols are 422 with the field named, a port nothing listens on says
// so.
func TestPortForwardThroughKubeAPIServer(t *testing.T) {
	ctx := context.Background()
	agent := newNodeAgent(t)
	// The test's guest listens on its loopback, which a real handler refuses to dial.
	agent.forwardAddress = func(addr netip.Addr) error {
		if !addr.IsLoopback() {
			return fmt.Errorf("%s: the test's guest is on its loopback", addr)
		}
		return nil
	}
	c := framework.StartAggregatedWith(t, func(o *virtapi.Options) { o.Handlers = agent.handlers })
	agent.serve(t, c.Hangar)

	ns := "forward"
	createNamespace(t, c.Kube, ns)
	bindRole(t, c.Kube, ns, "operator", "edit")
	bindRole(t, c.Kube, ns, "watcher", "view")
	_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("guest", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	vmis := c.Hangar.KubevirtV1().VirtualMachineInstances(ns)
	vmi, err := vmis.Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	require.NoError(t, err)
	base := func(resource string) string {
		return "/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/" + resource + "/guest/portforward/"
	}

	// Not running: a conflict, before any node is asked.
	_, resp, err := dialAs(t, c, "operator", base("virtualmachineinstances")+"22")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusConflict, resp.StatusCode, responseBody(resp))

	// The launcher pod, as the kubelet reports it: running on node-a at the test's address.
	pod, err := c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-guest", Labels: map[string]string{
			v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: string(vmi.UID)}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "compute", Image: "launcher"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}}}
	_, err = c.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
	vmi.Status.ActivePods = map[types.UID]string{pod.UID: "node-a"}
	_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)

	tcpPort := echoTCP(t)
	udpPort := echoUDP(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	require.Eventually(t, func() bool { // the agent's cache sees the instance run
		ws, _, err := dialAs(t, c, "operator", fmt.Sprintf("%s%d", base("virtualmachineinstances"), tcpPort))
		if err == nil {
			ws.Close()
		}
		return err == nil
	}, 10*time.Second, 100*time.Millisecond)

	for _, path := range []string{
		fmt.Sprintf("%s%d", base("virtualmachineinstances"), tcpPort),
		fmt.Sprintf("%s%d/tcp", base("virtualmachineinstances"), tcpPort),
		fmt.Sprintf("%s%d", base("virtualmachines"), tcpPort),
		fmt.Sprintf("%s%d/tcp", base("virtualmachines"), tcpPort),
	} {
		t.Run("edit forwards TCP: "+path, func(t *testing.T) {
			ws, resp, err := dialAs(t, c, "operator", path)
			require.NoError(t, err, responseBody(resp))
			defer ws.Close()
			require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte("hello")))
			readUntil(t, ws, "echo:hello")
		})
	}
	t.Run("edit forwards UDP, a datagram a message", func(t *testing.T) {
		for _, resource := range []string{"virtualmachineinstances", "virtualmachines"} {
			ws, resp, err := dialAs(t, c, "operator", fmt.Sprintf("%s%d/udp", base(resource), udpPort))
			require.NoError(t, err, responseBody(resp))
			for _, d := range []string{"one", "two"} {
				require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte(d)))
				require.NoError(t, ws.SetReadDeadline(time.Now().Add(10*time.Second)))
				_, b, err := ws.ReadMessage()
				require.NoError(t, err)
				assert.Equal(t, "udp:"+d, string(b))
			}
			ws.Close()
		}
	})
	operatorConfig, err := c.UserConfig("operator")
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "operator.kubeconfig")
	require.NoError(t, framework.WriteKubeconfig(operatorConfig, kubeconfig))
	t.Run("virtctl port-forward --stdio", func(t *testing.T) {
		for _, target := range []string{"vm/guest/" + ns, "vmi/guest/" + ns} {
			stdin, writer := io.Pipe()
			var out syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- virtctl.Main([]string{"--kubeconfig", kubeconfig, "port-forward", "--stdio=true", target, strconv.Itoa(tcpPort)}, stdin, &out, io.Discard)
			}()
			_, err := writer.Write([]byte("stdio"))
			require.NoError(t, err)
			assert.Eventually(t, func() bool { return out.String() == "echo:stdio" }, 10*time.Second, 20*time.Millisecond, "got %q", out.String())
			writer.Close()
			select {
			case <-done:
				t.Fatal("virtctl ended while the guest's end was open")
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	t.Run("virtctl port-forward listens and forwards TCP and UDP", func(t *testing.T) {
		localTCP, localUDP := freePort(t, "tcp"), freePort(t, "udp")
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		root := virtctl.NewCommand(virtctl.Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
		root.SetArgs([]string{"--kubeconfig", kubeconfig, "-n", ns, "port-forward", "vm/guest",
			fmt.Sprintf("%d:%d", localTCP, tcpPort), fmt.Sprintf("udp/%d:%d", localUDP, udpPort)})
		done := make(chan error, 1)
		go func() { done <- root.ExecuteContext(ctx) }()

		var conn net.Conn
		require.Eventually(t, func() bool {
			conn, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", localTCP))
			return err == nil
		}, 10*time.Second, 50*time.Millisecond)
		defer conn.Close()
		_, err = conn.Write([]byte("tcp"))
		require.NoError(t, err)
		got := make([]byte, len("echo:tcp"))
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = io.ReadFull(conn, got)
		require.NoError(t, err)
		assert.Equal(t, "echo:tcp", string(got))

		udp, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", localUDP))
		require.NoError(t, err)
		defer udp.Close()
		for _, d := range []string{"first", "second"} {
			_, err = udp.Write([]byte(d))
			require.NoError(t, err)
			require.NoError(t, udp.SetReadDeadline(time.Now().Add(10*time.Second)))
			buf := make([]byte, 100)
			n, err := udp.Read(buf)
			require.NoError(t, err)
			assert.Equal(t, "udp:"+d, string(buf[:n]))
		}
		cancel()
		require.NoError(t, <-done)
	})
	t.Run("view may not forward", func(t *testing.T) {
		for _, resource := range []string{"virtualmachineinstances", "virtualmachines"} {
			_, resp, err := dialAs(t, c, "watcher", fmt.Sprintf("%s%d", base(resource), tcpPort))
			require.Error(t, err)
			require.NotNil(t, resp)
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, responseBody(resp))
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct{ path, says string }{
			{"0", "port: Invalid value: 0"},
			{"65536", "port: Invalid value: 65536"},
			{"ssh", "must be a number"},
			{"22/sctp", `"field":"protocol"`},
		} {
			_, resp, err := dialAs(t, c, "operator", base("virtualmachineinstances")+tc.path)
			require.Error(t, err)
			require.NotNil(t, resp)
			assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tc.path)
			assert.Contains(t, responseBody(resp), tc.says)
		}
		_, resp, err := dialAs(t, c, "operator", "/apis/subresources.kubevirt.io/v1/namespaces/"+ns+"/virtualmachines/missing/portforward/22")
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no such VM")
	})
	t.Run("a port nothing listens on", func(t *testing.T) {
		_, resp, err := dialAs(t, c, "operator", fmt.Sprintf("%s%d", base("virtualmachineinstances"), closedPort))
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
		body := responseBody(resp)
		assert.Contains(t, body, fmt.Sprintf("port %d/tcp of the guest", closedPort))
		assert.Contains(t, body, "connection refused")
	})
}

// freePort is a local port free for now.
func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		defer pc.Close()
		return pc.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// echoTCP listens on the loopback and answers each connection with "echo:" and its bytes.
func echoTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
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
				_, _ = conn.Write([]byte("echo:"))
				_, _ = io.Copy(conn, conn)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// echoUDP listens on the loopback and answers each datagram with "udp:" and its bytes.
func echoUDP(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte("udp:"), buf[:n]...), from)
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).Port
}
