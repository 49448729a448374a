package setup

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"sigs.k8s.io/knftables"

	"github.com/hangarvm/hangar/pkg/podnetwork"
)

func testBridgedPod() podnetwork.BridgedPod {
	mac, _ := net.ParseMAC("0a:58:0a:d9:00:05")
	return podnetwork.BridgedPod{Interface: "eth0", IP: netip.MustParsePrefix("10.217.0.5/24"),
		Gateway: netip.MustParseAddr("10.217.0.1"), MAC: mac, MTU: 1450}
}

func TestReplacementMAC(t *testing.T) {
	for _, s := range []string{"0a:58:0a:d9:00:05", "52:54:00:12:34:56", "03:00:00:00:00:00"} {
		orig, _ := net.ParseMAC(s)
		got := replacementMAC(orig)
		assert.Len(t, got, 6)
		assert.NotEqual(t, orig.String(), got.String(), s)
		assert.Equal(t, byte(0x02), got[0]&0x03, "%s: locally administered unicast, got %s", s, got)
		assert.Equal(t, got.String(), replacementMAC(orig).String(), "the same on every setup")
	}
}

func TestBridgeSteps(t *testing.T) {
	plan := podnetwork.Plan{Interface: "default", Binding: podnetwork.BindingBridge, Bridge: "hangar-br0", Tap: "hangar-tap0",
		Gateway: netip.MustParsePrefix("169.254.75.10/32")}
	pod := testBridgedPod()
	newMAC := replacementMAC(pod.MAC).String()
	tests := []struct {
		name string
		tap  netlink.Link
		want []string
	}{
		{name: "first run", want: []string{
			"link hangar-br0: set mtu 1450",
			"link hangar-br0: address 169.254.75.10/32",
			"link eth0: set address " + newMAC,
			"link eth0: flush IPv4 addresses",
			"link eth0: set master hangar-br0",
			"link eth0: learning off",
			"link hangar-tap0: add tap for uid 107",
			"link hangar-tap0: set mtu 1450",
			"link hangar-tap0: set master hangar-br0",
			"link hangar-tap0: set up",
			"link eth0: set up",
			"link hangar-br0: set up",
		}},
		{name: "again, the tap exists", tap: &netlink.Tuntap{}, want: []string{
			"link hangar-br0: set mtu 1450",
			"link hangar-br0: address 169.254.75.10/32",
			"link eth0: set address " + newMAC,
			"link eth0: flush IPv4 addresses",
			"link eth0: set master hangar-br0",
			"link eth0: learning off",
			"link hangar-tap0: set mtu 1450",
			"link hangar-tap0: set master hangar-br0",
			"link hangar-tap0: set up",
			"link eth0: set up",
			"link hangar-br0: set up",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range bridgeSteps(nil, plan, pod, &bridgeLinks{tap: tt.tap}) {
				got = append(got, s.what)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// nftDump runs what fill puts in a transaction against knftables' model of a table, twice
// (a repeated setup), and dumps the table.
func nftDump(t *testing.T, family knftables.Family, fill func(*knftables.Transaction) error) string {
	t.Helper()
	fake := knftables.NewFake(family, nftTable)
	var dump string
	for i := range 2 {
		tx := fake.NewTransaction()
		require.NoError(t, fill(tx))
		require.NoError(t, fake.Run(context.Background(), tx))
		if i > 0 {
			assert.Equal(t, dump, fake.Dump(), "a repeated setup replaces the table with the same")
		}
		dump = fake.Dump()
	}
	return dump
}

func TestBridgeNFTables(t *testing.T) {
	guestMAC := net.HardwareAddr{0x0a, 0x58, 0x0a, 0xd9, 0x01, 0x05}
	podIP := netip.MustParseAddr("10.217.1.5")
	rules := nftDump(t, knftables.BridgeFamily, func(tx *knftables.Transaction) error {
		return bridgeRules(tx, "eth0", "hangar-tap0", guestMAC, podIP)
	})
	for _, want := range []string{
		"add chain bridge hangar forward { type filter hook forward priority -200 ; policy accept ; }",
		`add rule bridge hangar forward oifname "eth0" udp dport 67 drop`, // the guest's requests stay in the pod
		`add rule bridge hangar forward iifname "eth0" udp dport 68 drop`, // no other server answers the guest
		// The guest's own frames, reflected by a hairpinning CNI bridge, do not come back to it.
		`add rule bridge hangar forward iifname "eth0" ether saddr 0a:58:0a:d9:01:05 drop`,
		"add chain bridge hangar output { type filter hook output priority -200 ; policy accept ; }",
		`add rule bridge hangar output oifname "eth0" udp dport 68 drop`, // the launcher's answers stay in the pod
		// What the guest sends carries its own MAC and the pod's addresses (guestGuard).
		"add chain bridge hangar prerouting { type filter hook prerouting priority -200 ; policy accept ; }",
		`add rule bridge hangar prerouting iifname "hangar-tap0" jump from-guest`,
		"add rule bridge hangar from-guest ether saddr != 0a:58:0a:d9:01:05 drop",
		"add rule bridge hangar from-guest arp htype 1 arp ptype ip arp saddr ether 0a:58:0a:d9:01:05 arp saddr ip { 10.217.1.5, 0.0.0.0 } accept",
		"add rule bridge hangar from-guest ip saddr 10.217.1.5 accept",
		"add rule bridge hangar from-guest ip saddr 0.0.0.0 udp sport 68 udp dport 67 accept",
		"add rule bridge hangar from-guest ether type 0x8035 accept", // QEMU's announcement after a migration
		"add rule bridge hangar from-guest ip6 saddr fe80::858:aff:fed9:105 accept",
		"add rule bridge hangar from-guest ip6 saddr :: meta l4proto 58 accept",
		"add rule bridge hangar from-guest drop",
	} {
		assert.Contains(t, rules, want+"\n")
	}
	assert.NotContains(t, rules, "dnat")
	assert.NotContains(t, rules, "masquerade")

	tx := knftables.NewFake(knftables.BridgeFamily, nftTable).NewTransaction()
	require.NoError(t, bridgeRules(tx, "eth0", "hangar-tap0", guestMAC, podIP))
	assert.True(t, strings.HasPrefix(tx.String(), "add table bridge hangar\ndelete table bridge hangar\nadd table bridge hangar\n"),
		"the table is replaced in one transaction: %s", tx)
}
