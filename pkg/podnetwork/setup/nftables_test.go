package setup

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/knftables"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/podnetwork"
)

func TestNFTables(t *testing.T) {
	// The default interface's masquerade plan (podnetwork.Plans).
	plan := podnetwork.Plan{Interface: "default", Binding: podnetwork.BindingMasquerade, Bridge: "hangar-br0", Tap: "hangar-tap0",
		Gateway: netip.MustParsePrefix("10.0.2.1/24"), Guest: netip.MustParsePrefix("10.0.2.2/24"), Hostname: "guest"}
	masquerade := func(plan podnetwork.Plan, iface string) func(*knftables.Transaction) error {
		return func(tx *knftables.Transaction) error { return masqueradeRules(tx, plan, iface) }
	}
	rules := nftDump(t, knftables.IPv4Family, masquerade(plan, "eth0"))
	assert.Contains(t, rules, "add chain ip hangar prerouting { type nat hook prerouting priority -100 ; policy accept ; }\n")
	assert.Contains(t, rules, "add chain ip hangar postrouting { type nat hook postrouting priority 100 ; policy accept ; }\n")
	assert.Contains(t, rules, `add rule ip hangar prerouting iifname "eth0" meta l4proto { tcp, udp } dnat to 10.0.2.2`+"\n")
	assert.Contains(t, rules, `add rule ip hangar postrouting ip saddr 10.0.2.2 oifname "eth0" masquerade`+"\n")
	assert.Contains(t, rules, "add chain ip hangar forward { type filter hook forward priority 0 ; policy accept ; }\n")
	assert.Contains(t, rules, `add rule ip hangar forward iifname "hangar-br0" ip saddr != 10.0.2.2 drop`+"\n")

	// The guest's frames, at the bridge: its MAC, its address, no IPv6.
	mac := net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	guard := nftDump(t, knftables.BridgeFamily, func(tx *knftables.Transaction) error {
		return guestGuardRules(tx, "hangar-tap0", mac, plan.Guest.Addr())
	})
	for _, want := range []string{
		"add chain bridge hangar prerouting { type filter hook prerouting priority -200 ; policy accept ; }",
		`add rule bridge hangar prerouting iifname "hangar-tap0" jump from-guest`,
		"add rule bridge hangar from-guest ether saddr != 02:00:00:00:00:01 drop",
		"add rule bridge hangar from-guest arp htype 1 arp ptype ip arp saddr ether 02:00:00:00:00:01 arp saddr ip { 10.0.2.2, 0.0.0.0 } accept",
		"add rule bridge hangar from-guest ip saddr 10.0.2.2 accept",
		"add rule bridge hangar from-guest ip saddr 0.0.0.0 udp sport 68 udp dport 67 accept",
		"add rule bridge hangar from-guest ether type 0x8035 accept", // QEMU's announcement after a migration
		"add rule bridge hangar from-guest drop",
	} {
		assert.Contains(t, guard, want+"\n")
	}
	assert.NotContains(t, guard, "ip6")

	plan.Ports = []v1.Port{{Port: 22, Protocol: "TCP"}, {Port: 53, Protocol: "UDP"}}
	rules = nftDump(t, knftables.IPv4Family, masquerade(plan, "eth0"))
	assert.Contains(t, rules, `add rule ip hangar prerouting iifname "eth0" tcp dport 22 dnat to 10.0.2.2`+"\n")
	assert.Contains(t, rules, `add rule ip hangar prerouting iifname "eth0" udp dport 53 dnat to 10.0.2.2`+"\n")
	assert.NotContains(t, rules, "l4proto")

	// Nothing from outside the plan is written into a rule unchecked.
	tx := knftables.NewFake(knftables.IPv4Family, nftTable).NewTransaction()
	assert.ErrorContains(t, masqueradeRules(tx, plan, `eth0" accept`), "not a name the rules can use")
	mac = net.HardwareAddr{0x0a, 0x58, 0x0a, 0xd9, 0x01, 0x05}
	ip := netip.MustParseAddr("10.217.1.5")
	assert.ErrorContains(t, bridgeRules(tx, "eth0 accept;", "hangar-tap0", mac, ip), "not a name the rules can use")
	assert.ErrorContains(t, bridgeRules(tx, "eth0", "tap0 accept;", mac, ip), "not a name the rules can use")
	assert.ErrorContains(t, bridgeRules(tx, "eth0", "hangar-tap0", net.HardwareAddr{1, 2, 3}, ip), "not a 48-bit MAC")
	assert.ErrorContains(t, bridgeRules(tx, "eth0", "hangar-tap0", mac, netip.MustParseAddr("fd00::1")), "not IPv4")
	plan.Ports = []v1.Port{{Port: 22, Protocol: "tcp dport 1 accept; sctp"}}
	assert.ErrorContains(t, masqueradeRules(tx, plan, "eth0"), "neither TCP nor UDP")
}

// A pool hands an interface back out only for its own family, and never one that a setup
// still holds.
func TestNFTPoolReuse(t *testing.T) {
	var p nftPool
	ip, bridge := knftables.NewFake(knftables.IPv4Family, nftTable), knftables.NewFake(knftables.BridgeFamily, nftTable)
	p.put(knftables.IPv4Family, ip)
	p.put(knftables.BridgeFamily, bridge)

	got, err := p.get(knftables.BridgeFamily)
	require.NoError(t, err)
	assert.Same(t, bridge, got)
	got, err = p.get(knftables.IPv4Family)
	require.NoError(t, err)
	assert.Same(t, ip, got)
	assert.Empty(t, p.idle[knftables.IPv4Family], "an interface in use stays out of the pool")

	p.put(knftables.IPv4Family, got)
	again, err := p.get(knftables.IPv4Family)
	require.NoError(t, err)
	assert.Same(t, ip, again)
}
