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

	plan.Ports = []v1.Port{{Port: 22, Protocol: "TCP"}, {Port: 53, Protocol: "UDP"}}
	rules = nftDump(t, knftables.IPv4Family, masquerade(plan, "eth0"))
	assert.Contains(t, rules, `add rule ip hangar prerouting iifname "eth0" tcp dport 22 dnat to 10.0.2.2`+"\n")
	assert.Contains(t, rules, `add rule ip hangar prerouting iifname "eth0" udp dport 53 dnat to 10.0.2.2`+"\n")
	assert.NotContains(t, rules, "l4proto")

	// Nothing from outside the plan is written into a rule unchecked.
	tx := knftables.NewFake(knftables.IPv4Family, nftTable).NewTransaction()
	assert.ErrorContains(t, masqueradeRules(tx, plan, `eth0" accept`), "not a name the rules can use")
	mac := net.HardwareAddr{0x0a, 0x58, 0x0a, 0xd9, 0x01, 0x05}
	assert.ErrorContains(t, bridgeRules(tx, "eth0 accept;", mac), "not a name the rules can use")
	assert.ErrorContains(t, bridgeRules(tx, "eth0", net.HardwareAddr{1, 2, 3}), "not a 48-bit MAC")
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
