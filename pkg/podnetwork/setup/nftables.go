package setup

import (
	"context"
	"fmt"
	"net"
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
	return nil
}

// bridgeRules fills tx with the bridge binding's table (family bridge), which keeps DHCP
// inside the pod: the guest's requests do not reach the pod network, no other server there
// answers the guest, and the launcher's answers stay on the bridge's guest side. Frames from
// the pod network that carry the guest's own MAC as their source do not reach the guest: a
// CNI bridge in hairpin mode reflects the guest's broadcasts (ARP requests, IPv6 neighbour
// solicitations, which a guest's duplicate address detection takes for another host's).
func bridgeRules(tx *knftables.Transaction, podIface string, guestMAC net.HardwareAddr) error {
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
	return nil
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
