package network

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func testVMI(mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guest", UID: "uid-1"},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}},
	}
	for _, m := range mutate {
		m(vmi)
	}
	v1.SetDefaults_VirtualMachineInstanceSpec(&vmi.Spec)
	return vmi
}

func TestPlans(t *testing.T) {
	plans, err := Plans(testVMI())
	require.NoError(t, err)
	require.Len(t, plans, 1)
	p := plans[0]
	assert.Equal(t, "default", p.Interface)
	assert.Equal(t, "hangar-br0", p.Bridge)
	assert.Equal(t, "hangar-tap0", p.Tap)
	assert.Equal(t, netip.MustParsePrefix("10.0.2.1/24"), p.Gateway)
	assert.Equal(t, netip.MustParsePrefix("10.0.2.2/24"), p.Guest)
	assert.Equal(t, "guest", p.Hostname)
	assert.Nil(t, p.Ports)

	plans, err = Plans(testVMI(func(v *v1.VirtualMachineInstance) {
		v.Spec.Hostname = "host"
		v.Spec.Networks = []v1.Network{{Name: "net", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{VMNetworkCIDR: "192.168.7.0/29"}}}}
		v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "net", Ports: []v1.Port{{Port: 22}, {Port: 53, Protocol: "UDP"}}}}
	}))
	require.NoError(t, err)
	assert.Equal(t, netip.MustParsePrefix("192.168.7.2/29"), plans[0].Guest)
	assert.Equal(t, "host", plans[0].Hostname)

	_, err = Plans(testVMI(func(v *v1.VirtualMachineInstance) {
		v.Spec.Networks = []v1.Network{{Name: "net", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
		v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "net", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}}}
	}))
	assert.ErrorContains(t, err, "only the masquerade binding")

	_, err = Plans(testVMI(func(v *v1.VirtualMachineInstance) {
		v.Spec.Networks = []v1.Network{{Name: "net", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{VMNetworkCIDR: "10.0.0.0/31"}}}}
		v.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "net"}}
	}))
	assert.ErrorContains(t, err, "at least 4 addresses")
}

func TestNFTables(t *testing.T) {
	plans, err := Plans(testVMI())
	require.NoError(t, err)
	rules := NFTables(plans[0], "eth0")
	assert.Contains(t, rules, "delete table ip hangar\n")
	assert.Contains(t, rules, `iifname "eth0" meta l4proto { tcp, udp } dnat to 10.0.2.2`)
	assert.Contains(t, rules, `ip saddr 10.0.2.2 oifname "eth0" masquerade`)

	plans[0].Ports = []v1.Port{{Port: 22, Protocol: "TCP"}, {Port: 53, Protocol: "UDP"}}
	rules = NFTables(plans[0], "eth0")
	assert.Contains(t, rules, `iifname "eth0" tcp dport 22 dnat to 10.0.2.2`)
	assert.Contains(t, rules, `iifname "eth0" udp dport 53 dnat to 10.0.2.2`)
	assert.NotContains(t, rules, "l4proto")
}

// clientMessage is a client message of type typ from mac, asking for requested (if valid).
func clientMessage(typ byte, mac net.HardwareAddr, requested netip.Addr) []byte {
	b := make([]byte, 240)
	b[0], b[1], b[2] = 1, 1, 6
	copy(b[4:8], []byte{1, 2, 3, 4})
	binary.BigEndian.PutUint16(b[10:], 0x8000)
	copy(b[28:], mac)
	copy(b[236:], dhcpMagic)
	b = append(b, optMessageType, 1, typ)
	if requested.IsValid() {
		a := requested.As4()
		b = append(append(b, optRequestedIP, 4), a[:]...)
	}
	return append(b, optEnd)
}

func TestDHCPReplies(t *testing.T) {
	mac, _ := net.ParseMAC("52:54:00:aa:bb:cc")
	lease := Lease{
		MAC: mac, IP: netip.MustParsePrefix("10.0.2.2/24"), Router: netip.MustParseAddr("10.0.2.1"),
		DNS: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, Domain: "ns.svc.cluster.local",
		Hostname: "guest", MTU: 1450, Duration: time.Hour,
	}
	server := netip.MustParseAddr("10.0.2.1")
	parse := func(b []byte) dhcpMessage {
		m, err := parseDHCP(b)
		require.NoError(t, err)
		return m
	}

	offer := lease.reply(parse(clientMessage(dhcpDiscover, mac, netip.Addr{})), server)
	require.NotNil(t, offer)
	m := parse(offer)
	assert.Equal(t, byte(2), m.op)
	assert.Equal(t, [4]byte{1, 2, 3, 4}, m.xid)
	assert.Equal(t, []byte{dhcpOffer}, m.options[optMessageType])
	assert.Equal(t, []byte{10, 0, 2, 2}, offer[16:20], "yiaddr")
	assert.Equal(t, []byte{255, 255, 255, 0}, m.options[optSubnetMask])
	assert.Equal(t, []byte{10, 0, 2, 1}, m.options[optRouter])
	assert.Equal(t, []byte{10, 0, 2, 1}, m.options[optServerID])
	assert.Equal(t, []byte{10, 96, 0, 10}, m.options[optDNS])
	assert.Equal(t, "guest", string(m.options[optHostname]))
	assert.Equal(t, "ns.svc.cluster.local", string(m.options[optDomainName]))
	assert.Equal(t, []byte{0x05, 0xaa}, m.options[optMTU])
	assert.Equal(t, []byte{0, 0, 0x0e, 0x10}, m.options[optLeaseTime])

	ack := parse(lease.reply(parse(clientMessage(dhcpRequest, mac, netip.MustParseAddr("10.0.2.2"))), server))
	assert.Equal(t, []byte{dhcpAck}, ack.options[optMessageType])
	nak := parse(lease.reply(parse(clientMessage(dhcpRequest, mac, netip.MustParseAddr("10.0.2.9"))), server))
	assert.Equal(t, []byte{dhcpNak}, nak.options[optMessageType])
	assert.Nil(t, nak.options[optRouter])

	other, _ := net.ParseMAC("52:54:00:00:00:01")
	assert.Nil(t, lease.reply(parse(clientMessage(dhcpDiscover, other, netip.Addr{})), server), "only the guest's MAC")

	_, err := parseDHCP([]byte("short"))
	assert.Error(t, err)
}

func TestResolvConf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(p, []byte("search ns.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\nnameserver 127.0.0.53\nnameserver ::1\noptions ndots:5\n"), 0o644))
	servers, domain := ResolvConf(p)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.96.0.10")}, servers)
	assert.Equal(t, "ns.svc.cluster.local", domain)
}
