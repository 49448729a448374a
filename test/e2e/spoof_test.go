//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/spoof"
)

// podGateway is the pod network's gateway on a node: the first address of its pod CIDR, where
// the local cluster's bridge plugin puts it. The node objects carry no pod CIDR (no
// kube-controller-manager allocates them; each node's CNI configuration has its range), so
// the local cluster's tool says it.
func podGateway(t *testing.T, node string) string {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	// The tool lists as many nodes as HANGAR_NODES says: as many as the cluster has.
	t.Setenv("HANGAR_NODES", strconv.Itoa(len(nodes.Items)))
	for _, line := range strings.Split(clusterTool(t, "nodes"), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == node {
			prefix, err := netip.ParsePrefix(f[2])
			require.NoError(t, err, "node %s's pod CIDR", node)
			return prefix.Masked().Addr().Next().String()
		}
	}
	t.Fatalf("hangar-cluster nodes does not list %s", node)
	return ""
}

// launcherLink reads a link's MAC in the launcher pod's network namespace, and the index of
// the pod interface's peer on the node (its iflink), as any user with pods/exec can.
func launcherLink(t *testing.T, ns string, pod corev1.Pod, link string) (mac net.HardwareAddr, peer int) {
	t.Helper()
	out, err := execCompute(t, ns, pod, fmt.Sprintf("cat /sys/class/net/%s/address /sys/class/net/eth0/iflink", link))
	require.NoError(t, err, out)
	f := strings.Fields(out)
	require.Len(t, f, 2, out)
	mac, err = net.ParseMAC(f[0])
	require.NoError(t, err)
	peer, err = strconv.Atoi(f[1])
	require.NoError(t, err)
	return mac, peer
}

// captureLauncher captures, on the launcher pod's node, what arrives from the pod's
// interface: the node's end of its veth (hack/cluster runs each node in a network namespace
// named after it).
func captureLauncher(t *testing.T, ns string, pod corev1.Pod) *spoof.Capture {
	t.Helper()
	_, peer := launcherLink(t, ns, pod, "eth0")
	c, err := spoof.StartIndex(filepath.Join("/run/netns", pod.Spec.NodeName), peer)
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	return c
}

// tryToSpoof types every attempt into the guest's console, once each (they take seconds), and
// then checks the guest's own traffic: an echo to the pod network's gateway.
func tryToSpoof(t *testing.T, console *stream, g spoof.GuestNet, phase string) {
	t.Helper()
	for i, a := range spoof.Attempts(g) {
		marker := fmt.Sprintf("%s-attempt-%d", phase, 1000+i)
		// The marker is computed in the guest, so the echo of the typed line does not match.
		require.NoError(t, console.conn.WriteMessage(gwebsocket.BinaryMessage,
			[]byte(fmt.Sprintf("%s; echo %s-attempt-$((1000+%d))\r", a.Command, phase, i))))
		console.waitFor(t, marker, 90*time.Second)
		t.Logf("%s: tried %s", phase, a.Name)
	}
	console.typeUntil(t, fmt.Sprintf("ping -c 2 -W 2 %s >/dev/null && echo %s-own-traffic-$((2+2))", g.Target, phase), phase+"-own-traffic-4")
}

// TestGuestCannotSpoofThePodNetwork: a tenant's guest, as in issue 31 (`ip addr add
// 10.217.1.99/32 dev eth0; ping -I 10.217.1.99 ...`), tries to send with IPv4, IPv6 and ARP
// sources not its own and with another MAC, behind masquerade and behind the bridge binding,
// while the node's end of the launcher pod's veth is captured: nothing leaves the pod with a
// source that is not the pod's (with the bridge binding, the guest's, which are the pod's),
// and the guest's own traffic flows. The masquerade guest then migrates to the other node and
// is held to the same there.
func TestGuestCannotSpoofThePodNetwork(t *testing.T) {
	nodeNames(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-spoof")

	t.Run("masquerade", func(t *testing.T) {
		_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
			&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "masq"}, Spec: guestSpec()}, metav1.CreateOptions{})
		require.NoError(t, err)
		console := attach(t, ns, "masq", "console")
		vmi := waitVMI(t, ns, "masq", 90*time.Second, func(v *v1.VirtualMachineInstance) bool {
			return v.Status.Phase == v1.Running && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != ""
		})
		console.waitFor(t, "HANGAR-GUEST-NET eth0 ip=10.0.2.2/24", 90*time.Second)

		check := func(phase string, vmi *v1.VirtualMachineInstance, console *stream) {
			pods := launcherPods(t, ns, vmi.UID)
			var pod corev1.Pod
			for _, p := range pods {
				if p.Spec.NodeName == vmi.Status.NodeName && p.DeletionTimestamp == nil {
					pod = p
				}
			}
			require.NotEmpty(t, pod.Name, "the launcher pod on %s", vmi.Status.NodeName)
			podMAC, _ := launcherLink(t, ns, pod, "eth0")
			podIP := netip.MustParseAddr(vmi.Status.Interfaces[0].IP)
			gateway := podGateway(t, pod.Spec.NodeName)

			capture := captureLauncher(t, ns, pod)
			tryToSpoof(t, console, spoof.GuestNet{Gateway: "10.0.2.1", ARPSender: "10.0.2.78", ARPTarget: "10.0.2.1", Target: gateway}, phase)
			time.Sleep(time.Second)
			capture.Stop()
			own := spoof.Identity{MACs: []net.HardwareAddr{podMAC}, IPs: []netip.Addr{podIP, spoof.LinkLocal(podMAC), netip.IPv6Unspecified()}}
			assert.Empty(t, own.Foreign(capture.Frames()), "%s: frames that left the pod with a source not its own", phase)
			assert.True(t, capture.Saw(func(f spoof.Frame) bool {
				return f.IPSrc == podIP && f.IPDst == netip.MustParseAddr(gateway)
			}), "%s: the guest's own echo left the pod, masqueraded", phase)
		}
		check("source", vmi, console)

		mig := migrate(t, ns, "masq")
		require.Equal(t, v1.MigrationSucceeded, mig.Status.Phase, "migration: %+v", mig.Status.MigrationState)
		moved := waitVMI(t, ns, "masq", 60*time.Second, func(v *v1.VirtualMachineInstance) bool {
			return v.Status.NodeName != vmi.Status.NodeName && len(v.Status.Interfaces) > 0 &&
				v.Status.Interfaces[0].IP != "" && v.Status.Interfaces[0].IP != vmi.Status.Interfaces[0].IP
		})
		check("target", moved, attach(t, ns, "masq", "console"))
	})

	t.Run("bridge", func(t *testing.T) {
		spec := guestSpec()
		spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
		spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default",
			InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}}}
		_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
			&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "bridged"}, Spec: spec}, metav1.CreateOptions{})
		require.NoError(t, err)
		console := attach(t, ns, "bridged", "console")
		vmi := waitVMI(t, ns, "bridged", 90*time.Second, func(v *v1.VirtualMachineInstance) bool {
			return v.Status.Phase == v1.Running && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != ""
		})
		podIP := netip.MustParseAddr(vmi.Status.Interfaces[0].IP)
		console.waitFor(t, "HANGAR-GUEST-NET eth0 ip="+podIP.String()+"/", 90*time.Second)
		pods := launcherPods(t, ns, vmi.UID)
		require.Len(t, pods, 1)
		pod := pods[0]
		guestMAC, err := net.ParseMAC(vmi.Status.Interfaces[0].MAC)
		require.NoError(t, err)
		eth0MAC, _ := launcherLink(t, ns, pod, "eth0")
		bridgeMAC, _ := launcherLink(t, ns, pod, "hangar-br0")
		gateway := podGateway(t, pod.Spec.NodeName)
		// An address of the node's pod network the local cluster never hands out (.250 of
		// its /24): the ARP attempt claims it.
		unused := podIP.As4()
		unused[3] = 250

		capture := captureLauncher(t, ns, pod)
		tryToSpoof(t, console, spoof.GuestNet{Gateway: gateway, ARPSender: netip.AddrFrom4(unused).String(), ARPTarget: gateway, Target: gateway}, "bridge")
		time.Sleep(time.Second)
		capture.Stop()
		// The pod's own stack still sends as the pod: the bridge's ARP, IPv6 link-local.
		own := spoof.Identity{MACs: []net.HardwareAddr{guestMAC, eth0MAC, bridgeMAC}, IPs: []netip.Addr{
			podIP, netip.IPv4Unspecified(), netip.MustParseAddr("169.254.75.10"),
			spoof.LinkLocal(guestMAC), spoof.LinkLocal(eth0MAC), spoof.LinkLocal(bridgeMAC), netip.IPv6Unspecified()}}
		assert.Empty(t, own.Foreign(capture.Frames()), "frames that left the pod with a source not its own")
		assert.True(t, capture.Saw(func(f spoof.Frame) bool {
			return f.Src.String() == guestMAC.String() && f.IPSrc == podIP && f.IPDst == netip.MustParseAddr(gateway)
		}), "the guest's own echo left the pod")
	})
}
