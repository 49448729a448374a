//go:build e2e && bench

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestPortForwardFigures prints the bytes/s that one connection carries through `virtctl
// port-forward` to a guest's port, beside `kubectl port-forward` to a pod's port on the same
// node. Both ends serve zeros with busybox nc; the guest runs under TCG, so its own network
// stack is part of its figure. BENCH_PF_MIB (64) MiB per connection, BENCH_PF_RUNS (3)
// connections each; medians. hack/bench/portforward.sh runs it. A benchmark: it fails only on
// errors.
func TestPortForwardFigures(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "bench-portforward")
	waitForDefaultServiceAccount(t, ns)
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)
	node := nodes.Items[0].Name
	size := int64(benchEnv("BENCH_PF_MIB", 64)) << 20
	runs := benchEnv("BENCH_PF_RUNS", 3)
	// -ll: a persistent server, a process per connection.
	const serve = "nc -ll -p 5001 -e cat /dev/zero"

	pod := restrictedPod("zeros", node, nil)
	pod.Spec.Containers[0].Command = []string{"sh", "-c", serve}
	pod.Spec.Containers[0].Ports = nil
	pod.Spec.Containers[0].ReadinessProbe.TCPSocket.Port = intstr.FromInt32(5001)
	_, err = kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "zeros", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}, 120*time.Second, time.Second, "the pod serving zeros is ready")

	spec := pinned(node)
	spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
	spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}}
	_, err = hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "zeros"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)
	vmi := waitVMI(t, ns, "zeros", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.Phase == v1.Running && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != ""
	})
	console := attach(t, ns, "zeros", "console")
	console.waitFor(t, banner, 120*time.Second)
	console.typeUntil(t, serve+" >/dev/null 2>&1 & echo serving-$((4*5))", "serving-20")

	guest := forward(t, virtctlCmd(t, "-n", ns, "port-forward", "vmi/zeros", "%d:5001"))
	podPort := forward(t, exec.Command("kubectl", "--kubeconfig", kubeconfig, "-n", ns, "port-forward", "pod/zeros", "%d:5001"))
	rate := func(address string) float64 {
		var rates []float64
		for i := 0; i < runs; i++ {
			var r float64
			require.Eventually(t, func() bool {
				var err error
				r, err = readRate(address, size)
				if err != nil {
					t.Logf("%s: %v", address, err)
				}
				return err == nil
			}, 60*time.Second, time.Second)
			rates = append(rates, r)
		}
		sort.Float64s(rates)
		return rates[len(rates)/2]
	}
	local := func(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
	g, p := rate(local(guest)), rate(local(podPort))
	// The guest's own ceiling: straight to its address on the pod network (this host is on
	// the local cluster's pod network), no port-forward.
	d := rate(net.JoinHostPort(vmi.Status.Interfaces[0].IP, "5001"))
	fmt.Printf("port-forward, one connection of %d MiB, median of %d: guest through virtctl %.1f MB/s; pod through kubectl %.1f MB/s on the same node (%.2fx); the guest straight over the pod network %.1f MB/s (virtctl's forward %.2fx of that)\n",
		size>>20, runs, g/1e6, p/1e6, g/p, d/1e6, g/d)
}

// forward starts a port-forward command (its argument "%d:PORT" gets a free local port) and
// returns the local port.
func forward(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	local := freeLocalPort(t)
	for i, a := range cmd.Args {
		if a == "%d:5001" {
			cmd.Args[i] = fmt.Sprintf("%d:5001", local)
		}
	}
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s: %s", cmd.Args[0], logs.String())
		}
	})
	return local
}

// readRate reads size bytes from a new connection to address and returns bytes/s, from the
// first byte to the last (the connection's set-up is not part of the figure).
func readRate(address string, size int64) (float64, error) {
	c, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Minute))
	first := make([]byte, 1)
	if _, err := io.ReadFull(c, first); err != nil {
		return 0, fmt.Errorf("first byte: %w", err)
	}
	start := time.Now()
	n, err := io.CopyN(io.Discard, c, size-1)
	if err != nil {
		return 0, fmt.Errorf("after %d bytes: %w", n+1, err)
	}
	return float64(size-1) / time.Since(start).Seconds(), nil
}
