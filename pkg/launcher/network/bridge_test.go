package network

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
)

func testBridgedPod() BridgedPod {
	mac, _ := net.ParseMAC("0a:58:0a:d9:00:05")
	return BridgedPod{Interface: "eth0", IP: netip.MustParsePrefix("10.217.0.5/24"),
		Gateway: netip.MustParseAddr("10.217.0.1"), MAC: mac, MTU: 1450}
}

func TestBridgedPodRecord(t *testing.T) {
	pod := testBridgedPod()
	noGateway := pod
	noGateway.Gateway = netip.Addr{}
	tests := []struct {
		name   string
		alias  string
		want   BridgedPod
		ok     bool
		errMsg string
	}{
		{name: "round trip", alias: pod.String(), want: pod, ok: true},
		{name: "no gateway", alias: noGateway.String(), want: noGateway, ok: true},
		{name: "no alias: not set up yet", alias: ""},
		{name: "someone else's alias", alias: "uplink to the rack"},
		{name: "a field missing", alias: "hangar-bridge/v1 if=eth0 ip=10.217.0.5/24 gw=10.217.0.1 mtu=1450", errMsg: "no mac"},
		{name: "a broken address", alias: "hangar-bridge/v1 if=eth0 ip=10.217.0.5 gw=none mac=0a:58:0a:d9:00:05 mtu=1450", errMsg: "ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := parseBridgedPod(tt.alias)
			if tt.errMsg != "" {
				assert.ErrorContains(t, err, tt.errMsg)
				assert.False(t, ok)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.ok, ok)
			if tt.ok {
				assert.Equal(t, tt.want, got)
			}
		})
	}
	assert.Less(t, len(pod.String()), 256, "fits IFALIASZ")
	assert.Equal(t, "hangar-bridge/v1 if=eth0 ip=10.217.0.5/24 gw=10.217.0.1 mac=0a:58:0a:d9:00:05 mtu=1450", pod.String())
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
	plan := Plan{Interface: "default", Binding: BindingBridge, Bridge: "hangar-br0", Tap: "hangar-tap0",
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
	rules := nftDump(t, knftables.BridgeFamily, func(tx *knftables.Transaction) error { return bridgeRules(tx, "eth0", guestMAC) })
	for _, want := range []string{
		"add chain bridge hangar forward { type filter hook forward priority -200 ; policy accept ; }",
		`add rule bridge hangar forward oifname "eth0" udp dport 67 drop`, // the guest's requests stay in the pod
		`add rule bridge hangar forward iifname "eth0" udp dport 68 drop`, // no other server answers the guest
		// The guest's own frames, reflected by a hairpinning CNI bridge, do not come back to it.
		`add rule bridge hangar forward iifname "eth0" ether saddr 0a:58:0a:d9:01:05 drop`,
		"add chain bridge hangar output { type filter hook output priority -200 ; policy accept ; }",
		`add rule bridge hangar output oifname "eth0" udp dport 68 drop`, // the launcher's answers stay in the pod
	} {
		assert.Contains(t, rules, want+"\n")
	}
	assert.NotContains(t, rules, "dnat")
	assert.NotContains(t, rules, "masquerade")

	tx := knftables.NewFake(knftables.BridgeFamily, nftTable).NewTransaction()
	require.NoError(t, bridgeRules(tx, "eth0", guestMAC))
	assert.True(t, strings.HasPrefix(tx.String(), "add table bridge hangar\ndelete table bridge hangar\nadd table bridge hangar\n"),
		"the table is replaced in one transaction: %s", tx)
}

func TestAttachment(t *testing.T) {
	bridgePlan := Plan{Interface: "default", Binding: BindingBridge, Bridge: "hangar-br0", Tap: "hangar-tap0",
		Gateway: netip.MustParsePrefix("169.254.75.10/32"), Hostname: "guest"}
	withMAC := bridgePlan
	withMAC.MAC = "de:ad:00:00:be:ef"
	masq := Plan{Interface: "default", Binding: BindingMasquerade, Bridge: "hangar-br0", Tap: "hangar-tap0", MAC: "52:54:00:01:02:03",
		Gateway: netip.MustParsePrefix("10.0.2.1/24"), Guest: netip.MustParsePrefix("10.0.2.2/24")}
	bridged := testBridgedPod()
	pod := Pod{Interface: "eth0", IP: netip.MustParseAddr("10.217.0.5"), Prefix: netip.MustParsePrefix("10.217.0.5/24"),
		Gateway: netip.MustParseAddr("10.217.0.1")}
	tests := []struct {
		name    string
		plan    Plan
		bridged *BridgedPod
		want    Attachment
	}{
		{
			name: "bridge: the guest gets the pod's address, gateway, MTU and MAC", plan: bridgePlan, bridged: &bridged,
			want: Attachment{Plan: bridgePlan, PodInterface: "eth0", PodIP: netip.MustParseAddr("10.217.0.5"), MAC: bridged.MAC,
				Lease: netip.MustParsePrefix("10.217.0.5/24"), Router: netip.MustParseAddr("10.217.0.1"), MTU: 1450},
		},
		{
			name: "bridge with the spec's MAC", plan: withMAC, bridged: &bridged,
			want: Attachment{Plan: withMAC, PodInterface: "eth0", PodIP: netip.MustParseAddr("10.217.0.5"), MAC: net.HardwareAddr{0xde, 0xad, 0, 0, 0xbe, 0xef},
				Lease: netip.MustParsePrefix("10.217.0.5/24"), Router: netip.MustParseAddr("10.217.0.1"), MTU: 1450},
		},
		{
			name: "masquerade: the guest's private address behind the pod's", plan: masq,
			want: Attachment{Plan: masq, PodInterface: "eth0", PodIP: netip.MustParseAddr("10.217.0.5"), MAC: net.HardwareAddr{0x52, 0x54, 0, 1, 2, 3},
				Lease: netip.MustParsePrefix("10.0.2.2/24"), Router: netip.MustParseAddr("10.0.2.1")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := attachment(tt.plan, pod, tt.bridged)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
