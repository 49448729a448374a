//go:build libvirt

package node

import (
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/spoof"
)

// A guest writes whole Ethernet frames, so it can claim any address a pod under Pod Security
// "restricted" (no CAP_NET_RAW) cannot. These tests let a real guest try, the way a tenant
// would from a shell in it, while a capture on the pod network's side of the pod interface
// records every frame that leaves the pod: nothing may carry a source that is not the pod's
// (or, with the bridge binding, the guest's own, which are the pod's), and the guest's own
// traffic still flows.

// capture starts a capture on the out namespace's end of the pod's veth: what the pod sends.
func capture(t *testing.T, n podNetwork) *spoof.Capture {
	t.Helper()
	c, err := spoof.Start("/run/netns/"+n.out, "veth-out")
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	return c
}

func mustMAC(t *testing.T, s string) net.HardwareAddr {
	mac, err := net.ParseMAC(s)
	require.NoError(t, err)
	return mac
}

// attack runs every spoofing attempt in the guest, then checks that the guest's own traffic
// still flows (its echo to 10.99.0.1 answered).
func attack(t *testing.T, r *launcherRun, g spoof.GuestNet) {
	c := r.console()
	for _, a := range spoof.Attempts(g) {
		r.typeLine(c, a.Command+"; echo attempt-''done")
		expect(t, c, "attempt-done", 60*time.Second)
		t.Logf("tried: %s", a.Name)
	}
	r.typeLine(c, "ping -c 2 -W 2 "+g.Gateway+" >/dev/null && ping -c 2 -W 2 10.99.0.1 >/dev/null && echo own-traffic-''flows")
	expect(t, c, "own-traffic-flows", 60*time.Second)
}

// TestMasqueradeGuestCannotSpoof: behind masquerade, nothing the guest sends leaves the pod
// except as the pod (NATed from the guest's own address); a guest that claims other IPv4 or
// IPv6 addresses, or another MAC, gets nothing out, and its ARP with another sender address
// teaches the pod's neighbour table nothing.
func TestMasqueradeGuestCannotSpoof(t *testing.T) {
	n := newPodNetwork(t)
	ipCmd(t, "-n", n.out, "addr", "add", "10.99.0.3/24", "dev", "veth-out")
	vmi := kernelBootVMI("spoof-masq", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachPodInterface = nil })
	n.setup(t, vmi)
	podMAC := mustMAC(t, showLink(t, n.pod, "eth0").Address)
	r := startLauncherWith(t, launcherOptions{netns: n.pod}, vmi)
	r.sync()
	r.waitConsoleLog("HANGAR-GUEST-NET eth0 ip=10.0.2.2/24 router=10.0.2.1", 120*time.Second)

	cap := capture(t, n)
	// The ARP attempt asks the pod itself (the guest's gateway), which would learn the
	// sender's address from a request to it.
	attack(t, r, spoof.GuestNet{Gateway: "10.0.2.1", ARPSender: "10.0.2.78", ARPTarget: "10.0.2.1", Target: "10.99.0.3"})
	time.Sleep(time.Second) // the last replies' stragglers
	cap.Stop()

	pod := spoof.Identity{MACs: []net.HardwareAddr{podMAC}, IPs: []netip.Addr{
		netip.MustParseAddr("10.99.0.2"), spoof.LinkLocal(podMAC), netip.IPv6Unspecified()}}
	assert.Empty(t, pod.Foreign(cap.Frames()), "frames that left the pod with a source not its own")
	assert.True(t, cap.Saw(func(f spoof.Frame) bool {
		return f.IPSrc == netip.MustParseAddr("10.99.0.2") && f.IPDst == netip.MustParseAddr("10.99.0.1")
	}), "the guest's own echo left the pod, masqueraded")
	assert.False(t, cap.Saw(func(f spoof.Frame) bool { return f.IPDst == netip.MustParseAddr("10.99.0.3") }),
		"nothing of the attempts reached 10.99.0.3")

	out, err := exec.Command("ip", "-n", n.pod, "neigh", "show", "dev", "hangar-br0").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "10.0.2.78", "the pod's neighbour table learnt a spoofed ARP sender")
	assert.NotContains(t, string(out), spoof.ForeignMAC, "the pod's neighbour table learnt a foreign MAC")
}

// TestBridgeGuestCannotSpoof: with the bridge binding the guest's frames reach the pod
// network as they are, so each is held to the guest's identity, which is the pod's: its MAC,
// the pod's IPv4 address, the IPv6 link-local address of its MAC. The attempts above are
// dropped at the tap; the guest's own IPv4 and link-local IPv6 still flow.
func TestBridgeGuestCannotSpoof(t *testing.T) {
	n := newPodNetwork(t)
	ipCmd(t, "-n", n.out, "addr", "add", "10.99.0.3/24", "dev", "veth-out")
	guestMAC := mustMAC(t, showLink(t, n.pod, "eth0").Address)
	vmi := bridgeVMI("spoof-bridge")
	n.setup(t, vmi)
	r := startLauncherWith(t, launcherOptions{netns: n.pod}, vmi)
	r.sync()
	r.waitConsoleLog("HANGAR-GUEST-NET eth0 ip=10.99.0.2/24 router=10.99.0.1", 120*time.Second)
	// The pod's own links keep sending what the pod's stack sends (its IPv6 link-local
	// traffic, the bridge's ARP): their addresses are the pod's too.
	eth0MAC, bridgeMAC := mustMAC(t, showLink(t, n.pod, "eth0").Address), mustMAC(t, showLink(t, n.pod, "hangar-br0").Address)
	var outLinkLocal string
	for _, a := range showLink(t, n.out, "veth-out").AddrInfo {
		if a.Family == "inet6" && strings.HasPrefix(a.Local, "fe80:") {
			outLinkLocal = a.Local
		}
	}
	require.NotEmpty(t, outLinkLocal)

	cap := capture(t, n)
	attack(t, r, spoof.GuestNet{Gateway: "10.99.0.1", ARPSender: "10.99.0.78", ARPTarget: "10.99.0.3", Target: "10.99.0.3"})
	c := r.console()
	r.typeLine(c, "ping6 -c 2 -W 2 -I eth0 "+outLinkLocal+" >/dev/null && echo link-local-''flows")
	expect(t, c, "link-local-flows", 60*time.Second)
	time.Sleep(time.Second)
	cap.Stop()

	pod := spoof.Identity{MACs: []net.HardwareAddr{guestMAC, eth0MAC, bridgeMAC}, IPs: []netip.Addr{
		netip.MustParseAddr("10.99.0.2"), netip.IPv4Unspecified(), netip.MustParseAddr("169.254.75.10"),
		spoof.LinkLocal(guestMAC), spoof.LinkLocal(eth0MAC), spoof.LinkLocal(bridgeMAC), netip.IPv6Unspecified()}}
	assert.Empty(t, pod.Foreign(cap.Frames()), "frames that left the pod with a source not its own")
	assert.True(t, cap.Saw(func(f spoof.Frame) bool {
		return f.Src.String() == guestMAC.String() && f.IPSrc == netip.MustParseAddr("10.99.0.2") && f.IPDst == netip.MustParseAddr("10.99.0.1")
	}), "the guest's own IPv4 left the pod")
	assert.True(t, cap.Saw(func(f spoof.Frame) bool { return f.IPSrc == spoof.LinkLocal(guestMAC) }),
		"the guest's link-local IPv6 left the pod")
	assert.False(t, cap.Saw(func(f spoof.Frame) bool { return f.IPDst == netip.MustParseAddr("10.99.0.3") }),
		"nothing of the attempts reached 10.99.0.3")
}
