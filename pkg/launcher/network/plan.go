// Package network connects a guest to its launcher pod's network with KubeVirt's masquerade
// binding: inside the pod's network namespace a bridge (the guest's gateway) and a tap for
// QEMU, a DHCP server giving the guest its private address, and nftables rules that NAT the
// guest's egress to the pod's address and forward the declared ports (all, when none are
// declared) from the pod's address to the guest.
//
// The privileged part (SetupPod: links, addresses, sysctls, nftables) needs CAP_NET_ADMIN in
// the pod's network namespace, which a launcher container does not have; virt-handler runs
// it from the host (nsenter into the launcher's namespace), or a launcher with the
// capability runs it itself. The DHCP server needs no privilege and runs in the launcher.
package network

import (
	"fmt"
	"net/netip"
	"strings"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
)

// DefaultVMNetworkCIDR is the guest's private network when the pod network names none.
const DefaultVMNetworkCIDR = "10.0.2.0/24"

// Plan is what the masquerade binding makes of one instance's pod-network interface.
type Plan struct {
	// Interface is the spec's interface name.
	Interface string
	// Bridge and Tap are the link names in the pod's namespace.
	Bridge, Tap string
	// MAC is the guest interface's MAC address.
	MAC string
	// Gateway is the bridge's address, the guest's default route and DNS forwarder target.
	Gateway netip.Prefix
	// Guest is the guest's address.
	Guest netip.Prefix
	// Ports to forward; nil forwards every TCP and UDP port.
	Ports []v1.Port
	// Hostname is handed to the guest by DHCP.
	Hostname string
}

// Plans is the plan of every masquerade interface of vmi, in spec order.
func Plans(vmi *v1.VirtualMachineInstance) ([]Plan, error) {
	networks := map[string]v1.Network{}
	for _, n := range vmi.Spec.Networks {
		networks[n.Name] = n
	}
	var plans []Plan
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		n, ok := networks[iface.Name]
		if !ok {
			return nil, fmt.Errorf("interface %s: no network of that name", iface.Name)
		}
		if n.Pod == nil {
			return nil, fmt.Errorf("interface %s: only the pod network is supported", iface.Name)
		}
		if iface.Masquerade == nil {
			return nil, fmt.Errorf("interface %s: only the masquerade binding is supported", iface.Name)
		}
		if len(plans) > 0 {
			return nil, fmt.Errorf("interface %s: only one interface can use the pod network", iface.Name)
		}
		cidr := n.Pod.VMNetworkCIDR
		if cidr == "" {
			cidr = DefaultVMNetworkCIDR
		}
		gw, guest, err := addresses(cidr)
		if err != nil {
			return nil, fmt.Errorf("interface %s: vmNetworkCIDR: %w", iface.Name, err)
		}
		hostname := vmi.Spec.Hostname
		if hostname == "" {
			hostname = vmi.Name
		}
		plans = append(plans, Plan{
			Interface: iface.Name,
			Bridge:    fmt.Sprintf("hangar-br%d", i),
			Tap:       fmt.Sprintf("hangar-tap%d", i),
			MAC:       domain.MACAddress(vmi, iface),
			Gateway:   gw,
			Guest:     guest,
			Ports:     iface.Ports,
			Hostname:  hostname,
		})
	}
	return plans, nil
}

// addresses are the first (gateway) and second (guest) addresses of an IPv4 network, as
// KubeVirt assigns them: 10.0.2.1 and 10.0.2.2 in 10.0.2.0/24.
func addresses(cidr string) (gw, guest netip.Prefix, err error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return gw, guest, err
	}
	p = p.Masked()
	if !p.Addr().Is4() || p.Bits() > 30 {
		return gw, guest, fmt.Errorf("%s: need an IPv4 network of at least 4 addresses", cidr)
	}
	a := p.Addr().Next()
	return netip.PrefixFrom(a, p.Bits()), netip.PrefixFrom(a.Next(), p.Bits()), nil
}

// NFTables is the ruleset (one nft table of its own) for plan, with podIface the pod's
// interface. Loading it replaces the table atomically.
func NFTables(plan Plan, podIface string) string {
	guest := plan.Guest.Addr().String()
	var fwd strings.Builder
	if plan.Ports == nil {
		fmt.Fprintf(&fwd, "\t\tiifname %q meta l4proto { tcp, udp } dnat to %s\n", podIface, guest)
	} else {
		for _, p := range plan.Ports {
			proto := strings.ToLower(p.Protocol)
			if proto == "" {
				proto = "tcp"
			}
			fmt.Fprintf(&fwd, "\t\tiifname %q %s dport %d dnat to %s\n", podIface, proto, p.Port, guest)
		}
	}
	return fmt.Sprintf(`table ip hangar
delete table ip hangar
table ip hangar {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
%s	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr %s oifname %q masquerade
	}
}
`, fwd.String(), guest, podIface)
}
