//go:build bench

package integration

import (
	"bytes"
	"context"
	"fmt"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"k8s.io/apimachinery/pkg/types"
	"net/http"
	"path/filepath"
	"sort"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientwebsocket "k8s.io/client-go/transport/websocket"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	launcherapi "github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// burstByte asks the echo console for a burst of output.
const burstByte = 'B'

// echoConsole serves the console socket of vmi's launcher pod: every byte comes back at once,
// and burstByte answers with burst bytes of output, like a guest printing a file. It returns
// the pod's socket directory as the handler opens it.
func (a *nodeAgent) echoConsole(t *testing.T, vmi *v1.VirtualMachineInstance, burst int) *podsockets.Dir {
	t.Helper()
	l := listenUnix(t, filepath.Join(a.launcherPod(t, vmi), launcherapi.ConsoleSocketName))
	var podUID types.UID
	for uid := range vmi.Status.ActivePods {
		podUID = uid
	}
	dir, err := a.pods.Dir(podUID, layout.SocketVolume)
	require.NoError(t, err)
	t.Cleanup(func() { dir.Close() })
	payload := bytes.Repeat([]byte("0123456789abcdef"), burst/16)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				for {
					n, err := conn.Read(buf)
					if err != nil {
						return
					}
					for _, b := range buf[:n] {
						if b == burstByte {
							_, _ = conn.Write(payload)
						} else {
							_, _ = conn.Write([]byte{b})
						}
					}
				}
			}()
		}
	}()
	return dir
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[(len(d)*99)/100]
}

// TestConsoleLatencyAndThroughput prints the keystroke round trip through the whole console
// chain (client -> kube-apiserver -> virt-api -> virt-handler -> console socket) against the
// same socket read directly, and the chain's throughput for a burst of output. The echo on
// the socket stands in for the guest, so the figures are what Hangar adds. A benchmark: it
// fails only on errors. Run with hack/bench/console.sh.
func TestConsoleLatencyAndThroughput(t *testing.T) {
	const keystrokes, burst = 500, 32 << 20
	agent := newNodeAgent(t)
	c := framework.StartAggregatedWith(t, func(o *virtapi.Options) { o.Handlers = agent.handlers })
	agent.serve(t, c.Hangar)
	ctx := context.Background()
	ns := "console-bench"
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	vmis := c.Hangar.KubevirtV1().VirtualMachineInstances(ns)
	vmi, err := vmis.Create(ctx, newVMI("echo"), metav1.CreateOptions{})
	require.NoError(t, err)
	socket := agent.echoConsole(t, vmi, burst)
	vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
	_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)

	// The chain, as virtctl opens it.
	rt, holder, err := clientwebsocket.RoundTripperFor(c.Admin)
	require.NoError(t, err)
	var ws *gwebsocket.Conn
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest(http.MethodGet, c.URL+"/apis/subresources.kubevirt.io/v1/namespaces/"+ns+"/virtualmachineinstances/echo/console", nil)
		ws, err = clientwebsocket.Negotiate(rt, holder, req, "plain.kubevirt.io")
		return err == nil
	}, 10*time.Second, 100*time.Millisecond, "console: %v", err)
	defer ws.Close()

	chain := make([]time.Duration, 0, keystrokes)
	for i := 0; i < keystrokes; i++ {
		start := time.Now()
		require.NoError(t, ws.WriteMessage(gwebsocket.BinaryMessage, []byte{'k'}))
		_, data, err := ws.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, []byte{'k'}, data)
		chain = append(chain, time.Since(start))
	}

	direct := make([]time.Duration, 0, keystrokes)
	// Directly: the socket as the handler reaches it (openat2, peer check), without the chain.
	conn, err := socket.Dial(launcherapi.ConsoleSocketName)
	require.NoError(t, err)
	defer conn.Close()
	one := make([]byte, 1)
	for i := 0; i < keystrokes; i++ {
		start := time.Now()
		_, err := conn.Write([]byte{'k'})
		require.NoError(t, err)
		_, err = conn.Read(one)
		require.NoError(t, err)
		direct = append(direct, time.Since(start))
	}

	start := time.Now()
	require.NoError(t, ws.WriteMessage(gwebsocket.BinaryMessage, []byte{burstByte}))
	for received := 0; received < burst; {
		_, data, err := ws.ReadMessage()
		require.NoError(t, err)
		received += len(data)
	}
	throughput := float64(burst) / (1 << 20) / time.Since(start).Seconds()

	chainP50, chainP99 := percentiles(chain)
	directP50, directP99 := percentiles(direct)
	fmt.Printf("\nConsole keystroke round trip, %d keystrokes (echo on the console socket stands in for the guest):\n", keystrokes)
	fmt.Printf("  through kube-apiserver -> virt-api -> virt-handler: p50 %v  p99 %v\n", chainP50.Round(time.Microsecond), chainP99.Round(time.Microsecond))
	fmt.Printf("  the console socket directly:                       p50 %v  p99 %v\n", directP50.Round(time.Microsecond), directP99.Round(time.Microsecond))
	fmt.Printf("  ratio p50 %.1f, p99 %.1f\n", float64(chainP50)/float64(directP50), float64(chainP99)/float64(directP99))
	fmt.Printf("Console throughput for a %d MiB burst of output through the chain: %.1f MB/s\n\n", burst>>20, throughput)
}
