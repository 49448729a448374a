//go:build e2e && bench

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	launcherapi "github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// kubeletPodsDir is a node's kubelet pods directory, seen from the host (in the node's mount
// namespace it is /var/lib/kubelet/pods).
func kubeletPodsDir(node string) string {
	return filepath.Join(framework.RepoRoot(), "_cluster", "nodes", node, "kubelet", "pods")
}

// consoleConn is one way to the guest's serial console: the chain a user's console takes
// (client -> kube-apiserver -> virt-api -> virt-handler -> the launcher's console socket ->
// QEMU -> guest) or the launcher's console socket on the node, read directly.
type consoleConn struct {
	write func(b []byte) error
	read  func() ([]byte, error) // the next bytes the guest sent
	close func()
	// pending is what came after the last match.
	pending []byte
	// reads counts the pieces read: how finely each way hands the output over.
	reads int
}

func websocketConsole(conn *gwebsocket.Conn) *consoleConn {
	return &consoleConn{
		write: func(b []byte) error { return conn.WriteMessage(gwebsocket.BinaryMessage, b) },
		read: func() ([]byte, error) {
			_, data, err := conn.ReadMessage()
			return data, err
		},
		close: func() { conn.Close() },
	}
}

func socketConsole(conn net.Conn) *consoleConn {
	buf := make([]byte, 64<<10)
	return &consoleConn{
		write: func(b []byte) error {
			_, err := conn.Write(b)
			return err
		},
		read: func() ([]byte, error) {
			n, err := conn.Read(buf)
			return buf[:n], err
		},
		close: func() { conn.Close() },
	}
}

// until consumes the guest's output through want and says how many bytes that took; what
// came after want stays for the next call. A timeout closes nothing: the caller fails.
func (c *consoleConn) until(want string, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	seen := c.pending
	c.pending = nil
	count := 0
	for {
		if i := bytes.Index(seen, []byte(want)); i >= 0 {
			c.pending = append([]byte(nil), seen[i+len(want):]...)
			return count + i + len(want), nil
		}
		if time.Now().After(deadline) {
			return count + len(seen), fmt.Errorf("no %q within %s; tail %q", want, timeout, tail(seen))
		}
		// Keep only what a match could still need, so a long burst stays cheap to scan.
		if keep := len(want) - 1; len(seen) > 1<<16 {
			count += len(seen) - keep
			seen = append([]byte(nil), seen[len(seen)-keep:]...)
		}
		data, err := c.read()
		c.reads++
		if err != nil {
			return count + len(seen), err
		}
		seen = append(seen, data...)
	}
}

func tail(b []byte) string {
	if len(b) > 200 {
		b = b[len(b)-200:]
	}
	return string(b)
}

// prompt is how the test guest's shell prompt ends.
const prompt = "# "

// sync types Enter until a prompt answers, so a fresh connection starts on an idle shell.
func (c *consoleConn) sync(t *testing.T) {
	t.Helper()
	require.NoError(t, c.write([]byte("echo sync-$((1+1))\r")))
	_, err := c.until("sync-2", 10*time.Second)
	require.NoError(t, err)
	_, err = c.until(prompt, 10*time.Second)
	require.NoError(t, err)
}

// keystrokes types one character at a time into the guest's shell and times each echo.
// Every 32 characters an Enter runs the (unknown) command, so the line stays short.
func keystrokes(t *testing.T, c *consoleConn, n int) []time.Duration {
	t.Helper()
	c.sync(t)
	var rtts []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		require.NoError(t, c.write([]byte("a")))
		_, err := c.until("a", 10*time.Second)
		require.NoError(t, err)
		rtts = append(rtts, time.Since(start))
		if i%32 == 31 || i == n-1 {
			require.NoError(t, c.write([]byte("\r")))
			_, err := c.until("not found", 10*time.Second)
			require.NoError(t, err)
			_, err = c.until(prompt, 10*time.Second)
			require.NoError(t, err)
		}
	}
	return rtts
}

// burst has the guest print lines of numbers and times them until the end marker; it says
// how many bytes came, in how many pieces, and how long that took.
func burst(t *testing.T, c *consoleConn, lines int) (int, int, time.Duration) {
	t.Helper()
	c.sync(t)
	require.NoError(t, c.write([]byte(fmt.Sprintf("seq 1 %d; echo BURST-$((40+2))\r", lines))))
	start, reads := time.Now(), c.reads
	n, err := c.until("BURST-42", 300*time.Second)
	require.NoError(t, err)
	return n, c.reads - reads, time.Since(start)
}

// TestConsoleFigures prints the keystroke round trip through the console chain against the
// launcher's console socket read directly on the node, for the same guest, and the guest
// output throughput on both. hack/bench/console.sh runs it. A benchmark: it fails only on
// errors. The direct socket is the launcher's relay of QEMU's serial socket (QEMU's own
// socket has one client, the relay), so the ratio is what virt-api, virt-handler and
// kube-apiserver add.
func TestConsoleFigures(t *testing.T) {
	keys, lines := benchEnv("BENCH_KEYS", 200), benchEnv("BENCH_LINES", 20000)
	ns := namespace(t, "bench-console")
	ctx := context.Background()
	_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "echo"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	s := attach(t, ns, "echo", "console")
	s.waitFor(t, banner, 120*time.Second)
	s.typeUntil(t, "echo ready-$((1+1))", "ready-2")
	s.conn.Close()
	<-s.closed

	chain := func() *consoleConn { return websocketConsole(openStream(t, ns, "echo", "console")) }
	// Directly: the launcher pod's console socket on its node, reached as virt-handler
	// reaches it (below the kubelet's pods directory, the peer checked).
	running := waitVMI(t, ns, "echo", 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	pods, err := podsockets.OpenRoot(kubeletPodsDir(running.Status.NodeName))
	require.NoError(t, err)
	defer pods.Close()
	var podUID types.UID
	for uid := range running.Status.ActivePods {
		podUID = uid
	}
	dir, err := pods.Dir(podUID, layout.SocketVolume)
	require.NoError(t, err)
	defer dir.Close()
	direct := func() *consoleConn {
		conn, err := dir.Dial(launcherapi.ConsoleSocketName)
		require.NoError(t, err)
		return socketConsole(conn)
	}
	// One console client at a time: a new one replaces the old, so each way gets the guest
	// to itself. Alternate to spread any drift in the guest's speed over both.
	var viaChain, viaSocket []time.Duration
	for round := 0; round < 2; round++ {
		c := chain()
		viaChain = append(viaChain, keystrokes(t, c, keys/2)...)
		c.close()
		c = direct()
		viaSocket = append(viaSocket, keystrokes(t, c, keys/2)...)
		c.close()
	}
	chainP50, chainP99 := percentile(viaChain, 50), percentile(viaChain, 99)
	socketP50, socketP99 := percentile(viaSocket, 50), percentile(viaSocket, 99)
	fmt.Printf("\nconsole keystroke round trip to the guest's echo, n=%d each (TCG guest)\n", len(viaChain))
	fmt.Printf("  chain (client -> kube-apiserver -> virt-api -> virt-handler -> launcher -> guest): p50=%s p99=%s\n", chainP50, chainP99)
	fmt.Printf("  launcher console socket on the node:                                    p50=%s p99=%s\n", socketP50, socketP99)
	fmt.Printf("  ratio chain/socket: p50 %.2f, p99 %.2f\n", float64(chainP50)/float64(socketP50), float64(chainP99)/float64(socketP99))

	c := chain()
	n, np, d := burst(t, c, lines)
	c.close()
	c = direct()
	m, mp, e := burst(t, c, lines)
	c.close()
	fmt.Printf("guest output burst (seq 1 %d): chain %.2f MB/s (%d bytes in %s, %d messages), socket %.2f MB/s (%d bytes in %s, %d reads)\n",
		lines, float64(n)/d.Seconds()/1e6, n, d.Round(time.Millisecond), np, float64(m)/e.Seconds()/1e6, m, e.Round(time.Millisecond), mp)
}

// percentile of durations (nearest rank).
func percentile(d []time.Duration, p int) time.Duration {
	sorted := append([]time.Duration(nil), d...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[(len(sorted)*p+99)/100-1].Round(time.Microsecond)
}
