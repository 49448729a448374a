//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestBridgeBinding boots a guest with KubeVirt's bridge binding on the pod network: the
// guest holds the launcher pod's address (status and DHCP agree), answers on it on a port
// nobody declared, and reaches the node with it.
func TestBridgeBinding(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-bridge")
	spec := guestSpec()
	spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
	spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default",
		InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}},
		Ports:                  []v1.Port{{Name: "http", Port: 80}}}} // informational: every port reaches the guest
	_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "bridged"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)

	console := attach(t, ns, "bridged", "console") // opens at Running, before the guest's DHCP
	vmi := waitVMI(t, ns, "bridged", 60*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.Phase == v1.Running && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != ""
	})
	// virt-handler reads the address in the pod's network namespace; the kubelet may post
	// it in the pod's status later.
	var pods []corev1.Pod
	var podIP string
	require.Eventually(t, func() bool {
		pods = launcherPods(t, ns, vmi.UID)
		require.Len(t, pods, 1)
		podIP = pods[0].Status.PodIP
		return podIP != ""
	}, 30*time.Second, 200*time.Millisecond, "the launcher pod's IP in its status")
	status := vmi.Status.Interfaces[0]
	assert.Equal(t, podIP, status.IP, "status.interfaces[0].ipAddress is the pod's")
	assert.Equal(t, []string{podIP}, status.IPs)
	assert.Equal(t, "eth0", status.PodInterfaceName)

	console.waitFor(t, "HANGAR-GUEST-NET eth0 ip="+podIP+"/", 90*time.Second)
	router := regexp.MustCompile(`HANGAR-GUEST-NET eth0 ip=\S+ router=(\S+)`).FindStringSubmatch(console.output())
	require.Len(t, router, 2, "the guest has a default route")
	console.typeUntil(t, "cat /sys/class/net/eth0/address", status.MAC) // the MAC status reports is the guest's

	// Ingress from the node to the pod's address, on a port not in ports.
	console.typeUntil(t, "nc -l -p 8080 -e echo hello-bridge & echo listening-$((4+4))", "listening-8")
	var answer string
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(podIP, "8080"), 2*time.Second)
		if err != nil {
			return false
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(conn)
		answer = string(b)
		return answer == "hello-bridge\n"
	}, 30*time.Second, 250*time.Millisecond, "the guest answers at the pod's address (last %q)", answer)

	// Egress: the guest reaches the node through the pod's gateway with the pod's address
	// (the gateway is in the node's network namespace, a namespace of its own here).
	ln := listenOnNode(t, pods[0].Spec.NodeName, net.JoinHostPort(router[1], "0"))
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	type received struct {
		from, data string
	}
	got := make(chan received, 1)
	go func() {
		// busybox nc exits when the other side closes: read, close, and take every
		// connection a retyped command makes.
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, _ := io.ReadAll(c)
			c.Close()
			select {
			case got <- received{from: c.RemoteAddr().(*net.TCPAddr).IP.String(), data: string(b)}:
			default:
			}
		}
	}()
	console.typeUntil(t, fmt.Sprintf("echo hello-node | nc %s %d; echo sent-$((5+5))", router[1], port), "sent-10")
	select {
	case r := <-got:
		assert.Equal(t, podIP, r.from, "the guest leaves with the pod's address")
		assert.Equal(t, "hello-node\n", r.data)
	case <-time.After(30 * time.Second):
		t.Fatal("no connection from the guest to the node")
	}
}

// listenOnNode listens in the network namespace of the local cluster's node (hack/cluster
// names it after the node): the socket stays in that namespace, the test's thread leaves it.
func listenOnNode(t *testing.T, node, address string) net.Listener {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	require.NoError(t, err)
	defer self.Close()
	nodeNS, err := os.Open(filepath.Join("/run/netns", node))
	require.NoError(t, err, "the node's network namespace")
	defer nodeNS.Close()
	require.NoError(t, unix.Setns(int(nodeNS.Fd()), unix.CLONE_NEWNET))
	ln, listenErr := net.Listen("tcp", address)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// A thread stuck in another namespace must not run anything else: leave it locked,
		// so the runtime ends it with this goroutine.
		runtime.LockOSThread()
		t.Fatalf("back to the test's network namespace: %v", err)
	}
	require.NoError(t, listenErr)
	return ln
}
