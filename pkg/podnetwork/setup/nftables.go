package setup

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"sync"

	"sigs.k8s.io/knftables"

	"github.com/hangarvm/hangar/pkg/podnetwork"
)

// nftTable is the name of Hangar's nftables table in a pod's namespace, in the ip family
// (masquerade) or the bridge family (bridge binding).
const nftTable = "hangar"

// interfaceName is what a rule may name as a link: Linux allows nearly any byte in a link
// name, the rules are nft syntax, so anything else is refused before a rule is written.
var interfaceName = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,15}$`)

func checkInterfaceName(name string) error {
	if !interfaceName.MatchString(name) {
		return fmt.Errorf("pod interface %q: not a name the rules can use", name)
	}
	return nil
}

// replaceTable starts tx with the table emptied of whatever an earlier setup put there:
// the transaction replaces it atomically.
func replaceTable(tx *knftables.Transaction) {
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	tx.Add(&knftables.Table{})
}

// masqueradeRules fills tx with the masquerade binding's table (family ip): the guest's
// egress is NATed to the pod's address, and the declared ports (all TCP and UDP when none
// are declared) arriving on the pod interface go to the guest.
func masqueradeRules(tx *knftables.Transaction, plan podnetwork.Plan, podIface string) error {
	if err := checkInterfaceName(podIface); err != nil {
		return err
	}
	guest := plan.Guest.Addr().String()
	replaceTable(tx)
	tx.Add(&knftables.Chain{Name: "prerouting", Type: knftables.PtrTo(knftables.NATType),
		Hook: knftables.PtrTo(knftables.PreroutingHook), Priority: knftables.PtrTo(knftables.DNATPriority),
		Policy: knftables.PtrTo(knftables.AcceptPolicy)})
	tx.Add(&knftables.Chain{Name: "postrouting", Type: knftables.PtrTo(knftables.NATType),
		Hook: knftables.PtrTo(knftables.PostroutingHook), Priority: knftables.PtrTo(knftables.SNATPriority),
		Policy: knftables.PtrTo(knftables.AcceptPolicy)})
	iif := fmt.Sprintf("iifname %q", podIface)
	if plan.Ports == nil {
		tx.Add(&knftables.Rule{Chain: "prerouting", Rule: knftables.Concat(iif, "meta l4proto { tcp, udp }", "dnat to", guest)})
	}
	for _, p := range plan.Ports {
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		if proto != "tcp" && proto != "udp" {
			return fmt.Errorf("port %d: protocol %q is neither TCP nor UDP", p.Port, p.Protocol)
		}
		tx.Add(&knftables.Rule{Chain: "prerouting", Rule: knftables.Concat(iif, proto, "dport", p.Port, "dnat to", guest)})
	}
	tx.Add(&knftables.Rule{Chain: "postrouting",
		Rule: knftables.Concat("ip saddr", guest, fmt.Sprintf("oifname %q", podIface), "masquerade")})
	// The tap's guard (guestGuardRules) stops a foreign source first; this keeps anything
	// that is not the guest's from being routed out unmasqueraded, whatever reaches the
	// bridge.
	if err := checkInterfaceName(plan.Bridge); err != nil {
		return err
	}
	tx.Add(&knftables.Chain{Name: "forward", Type: knftables.PtrTo(knftables.FilterType),
		Hook: knftables.PtrTo(knftables.ForwardHook), Priority: knftables.PtrTo(knftables.FilterPriority),
		Policy: knftables.PtrTo(knftables.AcceptPolicy)})
	tx.Add(&knftables.Rule{Chain: "forward",
		Rule: knftables.Concat(fmt.Sprintf("iifname %q", plan.Bridge), "ip saddr !=", guest, "drop")})
	return nil
}

// bridgeRules fills tx with the bridge binding's table (family bridge), which keeps DHCP
// inside the pod: the guest's requests do not reach the pod network, no other server there
// answers the guest, and the launcher's answers stay on the bridge's guest side. Frames from
// the pod network that carry the guest's own MAC as their source do not reach the guest: a
// CNI bridge in hairpin mode reflects the guest's broadcasts (ARP requests, IPv6 neighbour
// solicitations, which a guest's duplicate address detection takes for another host's).
// What the guest sends is held to its own addresses (guestGuard): the pod's IPv4 address,
// which it took over, and the IPv6 link-local address of its MAC.
func bridgeRules(tx *knftables.Transaction, podIface, tap string, guestMAC net.HardwareAddr, podIP netip.Addr) error {
	if err := checkInterfaceName(podIface); err != nil {
		return err
	}
	if len(guestMAC) != 6 {
		return fmt.Errorf("guest MAC %q is not a 48-bit MAC", guestMAC)
	}
	replaceTable(tx)
	tx.Add(&knftables.Chain{Name: "forward", Type: knftables.PtrTo(knftables.FilterType),
		Hook: knftables.PtrTo(knftables.ForwardHook), Priority: knftables.PtrTo(knftables.FilterPriority),
		Policy: knftables.PtrTo(knftables.AcceptPolicy)})
	tx.Add(&knftables.Chain{Name: "output", Type: knftables.PtrTo(knftables.FilterType),
		Hook: knftables.PtrTo(knftables.OutputHook), Priority: knftables.PtrTo(knftables.FilterPriority),
		Policy: knftables.PtrTo(knftables.AcceptPolicy)})
	tx.Add(&knftables.Rule{Chain: "forward", Rule: fmt.Sprintf("oifname %q udp dport 67 drop", podIface)})
	tx.Add(&knftables.Rule{Chain: "forward", Rule: fmt.Sprintf("iifname %q udp dport 68 drop", podIface)})
	tx.Add(&knftables.Rule{Chain: "forward", Rule: fmt.Sprintf("iifname %q ether saddr %s drop", podIface, guestMAC)})
	tx.Add(&knftables.Rule{Chain: "output", Rule: fmt.Sprintf("oifname %q udp dport 68 drop", podIface)})
	return guestGuard(tx, tap, guestMAC, podIP, true)
}

// guestGuardRules fills tx with the masquerade binding's table of family bridge: only the
// guard on what the guest sends.
func guestGuardRules(tx *knftables.Transaction, tap string, guestMAC net.HardwareAddr, guestIP netip.Addr) error {
	if len(guestMAC) != 6 {
		return fmt.Errorf("guest MAC %q is not a 48-bit MAC", guestMAC)
	}
	replaceTable(tx)
	return guestGuard(tx, tap, guestMAC, guestIP, false)
}

// guestGuard adds the chains that hold every frame the guest sends through its tap to the
// guest's own identity, as the pod network holds a pod's: a pod under Pod Security
// "restricted" has no CAP_NET_RAW and cannot send a packet with another source, but a guest
// writes whole frames. Checked at the bridge's prerouting hook, before the frame is bridged
// to the pod interface or handed to the pod's own IP stack (the masquerade binding routes from
// there), so a spoofed frame neither leaves the pod nor teaches the pod's neighbour table a
// false address. What passes:
//
//   - the guest's MAC as the frame's source, always;
//   - ARP whose sender is the guest's MAC and the guest's IPv4 address (or 0.0.0.0: an
//     address probe);
//   - IPv4 from the guest's address, and DHCP's requests from 0.0.0.0 (udp 68 → 67);
//   - RARP (from the guest's MAC, which is all it carries): QEMU announces a migrated guest
//     with it, so the pod network learns where its MAC went;
//   - IPv6 (bridge binding only, which leaves IPv6 to the pod network as a pod has it) from
//     the link-local address the guest's MAC makes (EUI-64, what the pod interface had), and
//     ICMPv6 from :: (duplicate address detection, MLD before an address exists). A guest
//     with stable-privacy link-local addresses gets no IPv6 on the pod network: the pod
//     itself would have only the EUI-64 one. The masquerade binding gives the guest no IPv6.
//
// Anything else from the guest is dropped: other addresses, other EtherTypes, VLAN tags.
func guestGuard(tx *knftables.Transaction, tap string, mac net.HardwareAddr, ip netip.Addr, ipv6 bool) error {
	if err := checkInterfaceName(tap); err != nil {
		return err
	}
	if !ip.Is4() {
		return fmt.Errorf("guest address %s is not IPv4", ip)
	}
	tx.Add(&knftables.Chain{Name: "prerouting", Type: knftables.PtrTo(knftables.FilterType),
		Hook: knftables.PtrTo(knftables.PreroutingHook), Priority: knftables.PtrTo(knftables.FilterPriority),
		Policy: knftables.PtrTo(knftables.AcceptPolicy)})
	tx.Add(&knftables.Chain{Name: "from-guest"})
	tx.Add(&knftables.Rule{Chain: "prerouting", Rule: fmt.Sprintf("iifname %q jump from-guest", tap)})
	for _, rule := range []string{
		fmt.Sprintf("ether saddr != %s drop", mac),
		fmt.Sprintf("arp htype 1 arp ptype ip arp saddr ether %s arp saddr ip { %s, 0.0.0.0 } accept", mac, ip),
		fmt.Sprintf("ip saddr %s accept", ip),
		"ip saddr 0.0.0.0 udp sport 68 udp dport 67 accept",
		"ether type 0x8035 accept",
	} {
		tx.Add(&knftables.Rule{Chain: "from-guest", Rule: rule})
	}
	if ipv6 {
		tx.Add(&knftables.Rule{Chain: "from-guest", Rule: fmt.Sprintf("ip6 saddr %s accept", linkLocal(mac))})
		tx.Add(&knftables.Rule{Chain: "from-guest", Rule: "ip6 saddr :: meta l4proto 58 accept"})
	}
	tx.Add(&knftables.Rule{Chain: "from-guest", Rule: "drop"})
	return nil
}

// linkLocal is the IPv6 link-local address a MAC makes (modified EUI-64, RFC 4291), what
// Linux gives an interface by default.
func linkLocal(mac net.HardwareAddr) netip.Addr {
	a := [16]byte{0: 0xfe, 1: 0x80}
	a[8], a[9], a[10] = mac[0]^0x02, mac[1], mac[2]
	a[11], a[12] = 0xff, 0xfe
	a[13], a[14], a[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(a)
}

// loadRules replaces Hangar's table of family in the calling thread's network namespace
// with what fill puts in a transaction. knftables hands the transaction to nft in one
// batch, which the kernel applies whole or not at all; nft's error quotes the rule it
// refused.
func loadRules(ctx context.Context, family knftables.Family, fill func(*knftables.Transaction) error) error {
	nft, err := nftInterfaces.get(family)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	defer nftInterfaces.put(family, nft)
	tx := nft.NewTransaction()
	if err := fill(tx); err != nil {
		return fmt.Errorf("nftables table %s %s: %w", family, nftTable, err)
	}
	if err := nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("nftables table %s %s: %w", family, nftTable, err)
	}
	return nil
}

// nftInterfaces keeps knftables interfaces for reuse. knftables.New runs nft twice to
// probe it (its version, then a dry run), which costs as much as the rules themselves;
// what it learns is the binary's and the kernel's, the same in every network namespace, and
// each Run executes nft in the calling thread's namespace. An interface serves one setup at
// a time (Run holds a lock while nft runs), so concurrent setups each take their own.
var nftInterfaces nftPool

type nftPool struct {
	mu   sync.Mutex
	idle map[knftables.Family][]knftables.Interface
}

// get returns an idle interface for family, or probes nft for a new one.
func (p *nftPool) get(family knftables.Family) (knftables.Interface, error) {
	p.mu.Lock()
	if idle := p.idle[family]; len(idle) > 0 {
		nft := idle[len(idle)-1]
		p.idle[family] = idle[:len(idle)-1]
		p.mu.Unlock()
		return nft, nil
	}
	p.mu.Unlock()
	return knftables.New(family, nftTable)
}

// put hands nft back once its setup is done.
func (p *nftPool) put(family knftables.Family, nft knftables.Interface) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[knftables.Family][]knftables.Interface{}
	}
	p.idle[family] = append(p.idle[family], nft)
}
