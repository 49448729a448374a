//go:build libvirt

package node

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/podnetwork"
	"github.com/hangarvm/hangar/pkg/podnetwork/setup"
)

// podLink is what the test reads of a link in a namespace.
type podLink struct {
	Address  string `json:"address"`
	Master   string `json:"master"`
	Alias    string `json:"ifalias"`
	AddrInfo []struct {
		Family string `json:"family"`
		Local  string `json:"local"`
	} `json:"addr_info"`
	// LinkInfo is in the link's details (ip -d): for a bridge port, its port settings.
	LinkInfo struct {
		SlaveKind string `json:"info_slave_kind"`
		SlaveData struct {
			Learning bool `json:"learning"`
		} `json:"info_slave_data"`
	} `json:"linkinfo"`
}

func showLink(t *testing.T, netns, name string) podLink {
	t.Helper()
	var l podLink
	for _, what := range []string{"link", "addr"} { // the alias shows only in link, addresses only in addr
		out, err := exec.Command("ip", "-n", netns, "-j", "-d", what, "show", "dev", name).CombinedOutput()
		require.NoError(t, err, "%s", out)
		var links []podLink
		require.NoError(t, json.Unmarshal(out, &links))
		require.Len(t, links, 1)
		if what == "link" {
			l = links[0]
		} else {
			l.AddrInfo = links[0].AddrInfo
		}
	}
	return l
}

// bridgePortLearns tells whether the bridge port name in netns learns source MACs.
func bridgePortLearns(t *testing.T, netns, name string) bool {
	t.Helper()
	l := showLink(t, netns, name)
	require.Equal(t, "bridge", l.LinkInfo.SlaveKind, "%s is a bridge port", name)
	return l.LinkInfo.SlaveData.Learning
}

func ipv4Of(l podLink) []string {
	var out []string
	for _, a := range l.AddrInfo {
		if a.Family == "inet" {
			out = append(out, a.Local)
		}
	}
	return out
}

func bridgeVMI(name string) *v1.VirtualMachineInstance {
	return kernelBootVMI(name, func(v *v1.VirtualMachineInstance) {
		v.Spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
		v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default",
			InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}}}
	})
}

// TestBridgeBinding does what virt-handler does for a bridge interface (the setup from
// outside the pod's namespace, twice as a restarted handler would), then runs the launcher
// in the pod: the guest gets the pod's address by DHCP with the pod interface's MAC, is
// reached at the pod's address on any port and leaves with it.
func TestBridgeBinding(t *testing.T) {
	n := newPodNetwork(t)
	origMAC := showLink(t, n.pod, "eth0").Address
	vmi := bridgeVMI("bridge")
	plans, err := podnetwork.Plans(vmi)
	require.NoError(t, err)

	ctx := context.Background()
	netns, err := os.Open("/run/netns/" + n.pod)
	require.NoError(t, err)
	defer netns.Close()
	first, err := setup.Pod(ctx, netns, plans)
	require.NoError(t, err)
	require.Len(t, first, 1)
	a := first[0]
	assert.Equal(t, "eth0", a.PodInterface)
	assert.Equal(t, "10.99.0.2", a.PodIP.String())
	assert.Equal(t, "10.99.0.2/24", a.Lease.String())
	assert.Equal(t, "10.99.0.1", a.Router.String())
	assert.Equal(t, origMAC, a.MAC.String(), "the guest takes the pod interface's MAC")
	assert.Equal(t, 1500, a.MTU)

	eth0 := showLink(t, n.pod, "eth0")
	assert.Equal(t, "hangar-br0", eth0.Master)
	assert.Empty(t, ipv4Of(eth0), "the pod's address moves to the guest")
	assert.NotEqual(t, origMAC, eth0.Address, "the pod interface takes a new MAC")
	br := showLink(t, n.pod, "hangar-br0")
	assert.Equal(t, []string{"169.254.75.10"}, ipv4Of(br))
	assert.Contains(t, br.Alias, "hangar-bridge/v1 if=eth0 ip=10.99.0.2/24 gw=10.99.0.1 mac="+origMAC)
	assert.Equal(t, "hangar-br0", showLink(t, n.pod, "hangar-tap0").Master)
	// A hairpinning pod network reflects the guest's broadcasts: its MAC must not be learnt
	// on the pod interface (e2e TestGuestReachesServiceOnOtherNode/bridge).
	assert.False(t, bridgePortLearns(t, n.pod, "eth0"), "no MAC learning on the pod interface")
	assert.True(t, bridgePortLearns(t, n.pod, "hangar-tap0"), "the guest's MAC is learnt on the tap")

	// A restarted handler sets up again: the pod interface has nothing left to read, the
	// record on the bridge answers the same.
	again, err := setup.Pod(ctx, netns, plans)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Equal(t, eth0.Address, showLink(t, n.pod, "eth0").Address)
	inspected, err := podnetwork.InspectPod(netns, plans)
	require.NoError(t, err)
	assert.Equal(t, first, inspected)

	// The rest of the pod network never sees the guest's DHCP (nor the launcher's answers).
	var dhcpOutside net.PacketConn
	inNetns(t, n.out, func() {
		dhcpOutside, err = net.ListenPacket("udp4", "0.0.0.0:67")
		require.NoError(t, err)
	})
	defer dhcpOutside.Close()

	r := startLauncherWith(t, launcherOptions{netns: n.pod}, vmi)
	s := r.sync()
	require.Len(t, s.Interfaces, 1)
	assert.Equal(t, "10.99.0.2", s.Interfaces[0].IP)
	assert.Equal(t, "10.99.0.2", s.Interfaces[0].GuestIP)
	assert.Equal(t, origMAC, s.Interfaces[0].MAC)
	assert.Equal(t, "eth0", s.Interfaces[0].PodInterfaceName)

	took := r.waitConsoleLog("HANGAR-GUEST-NET eth0 ip=10.99.0.2/24 router=10.99.0.1", 120*time.Second)
	t.Logf("sync -> guest DHCP lease: %s", took)

	require.NoError(t, dhcpOutside.SetReadDeadline(time.Now().Add(time.Second)))
	_, from, err := dhcpOutside.ReadFrom(make([]byte, 1500))
	assert.Error(t, err, "a DHCP request from %v left the pod", from)

	c := r.console()
	r.typeLine(c, "cat /sys/class/net/eth0/address")
	expect(t, c, origMAC, 30*time.Second)

	// A hairpinning pod network sends the guest its own broadcasts back: 100 frames from the
	// pod network with the guest's MAC as their source stop at the pod. The guest counts
	// what it receives while they are sent (the marker is split so its echo does not match).
	r.typeLine(c, "a=$(cat /sys/class/net/eth0/statistics/rx_packets); sleep 4; b=$(cat /sys/class/net/eth0/statistics/rx_packets); "+
		"[ $((b-a)) -lt 50 ] && echo no-reflect''ed-frames || echo reflected-frames-$((b-a))")
	time.Sleep(time.Second)
	sendBroadcasts(t, n.out, "veth-out", origMAC, 100)
	expect(t, c, "no-reflected-frames", 30*time.Second)

	// Ingress on a port nobody declared: the pod's address is the guest's.
	r.typeLine(c, "nc -l -p 8080 -e echo hello-bridge &")
	n.waitForGuestAnswer(t, "hello-bridge\n")

	// Egress leaves with the pod's address, no NAT in between.
	var ln net.Listener
	inNetns(t, n.out, func() {
		ln, err = net.Listen("tcp", "10.99.0.1:7001")
		require.NoError(t, err)
	})
	defer ln.Close()
	r.typeLine(c, "echo hello-out | nc 10.99.0.1 7001")
	require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(30*time.Second)))
	conn, err := ln.Accept()
	require.NoError(t, err)
	defer conn.Close()
	assert.Equal(t, "10.99.0.2", conn.RemoteAddr().(*net.TCPAddr).IP.String())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(conn)
	require.NoError(t, err)
	assert.Equal(t, "hello-out\n", string(got))
}

// sendBroadcasts sends count Ethernet broadcasts with source MAC src (an experimental
// EtherType) out of ifname in network namespace netns, as a hairpinning bridge reflects a
// guest's broadcasts.
func sendBroadcasts(t *testing.T, netns, ifname, src string, count int) {
	t.Helper()
	srcMAC, err := net.ParseMAC(src)
	require.NoError(t, err)
	frame := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, srcMAC...)
	frame = append(frame, 0x88, 0xb5) // IEEE 802 local experimental EtherType
	frame = append(frame, make([]byte, 46)...)
	inNetns(t, netns, func() {
		ifi, err := net.InterfaceByName(ifname)
		require.NoError(t, err)
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		to := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
		copy(to.Addr[:], frame[:6])
		for range count {
			require.NoError(t, unix.Sendto(fd, frame, 0, to))
		}
	})
}
