// Package podnetwork connects a guest to its launcher pod's network with one of KubeVirt's
// bindings, both built from a bridge and a tap for QEMU inside the pod's network namespace
// and a DHCP server in the launcher:
//
//   - masquerade: the bridge is the guest's gateway on a private network, and nftables rules
//     NAT the guest's egress to the pod's address and forward the declared ports (all, when
//     none are declared) from the pod's address to the guest.
//   - bridge: the pod's interface is a port of the bridge and gives the guest its IPv4
//     address, gateway and MAC; the guest is reached at the pod's address directly. (IPv6 is
//     not handed over: the pod keeps its IPv6 addresses.)
//
// It has two users with different rights, and a package for each beside what they share:
//
//   - this package: the plan of each interface (Plans), the record the bridge binding keeps
//     on its bridge, and InspectPod, which reads over netlink what the setup made. Read only,
//     no privilege: both sides use it.
//   - setup: links, addresses, nftables rules and sysctls made in the pod's network namespace.
//     It needs CAP_NET_ADMIN there, which a launcher container does not have: virt-handler
//     (privileged) runs it from the host on a thread that entered the launcher's namespace.
//   - dhcp: the DHCP server the launcher (unprivileged) runs on the bridge for its guest.
package podnetwork

import (
	"fmt"
	"net/netip"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// DefaultVMNetworkCIDR is the guest's private network when the pod network names none.
const DefaultVMNetworkCIDR = "10.0.2.0/24"

// Binding is how an interface reaches the pod network.
type Binding string

const (
	BindingMasquerade Binding = "masquerade"
	BindingBridge     Binding = "bridge"
)

// Plan is what a binding makes of one instance's pod-network interface.
type Plan struct {
	// Interface is the spec's interface name.
	Interface string
	Binding   Binding
	// Bridge and Tap are the link names in the pod's namespace.
	Bridge, Tap string
	// MAC is the guest interface's MAC address. Empty for a bridge binding without a
	// macAddress in the spec: the guest then takes the pod interface's, known only in the pod.
	MAC string
	// Gateway is the bridge's address: for masquerade the guest's default route, for bridge
	// a link-local address the DHCP server answers from.
	Gateway netip.Prefix
	// Guest is the guest's address (masquerade; bridge hands the pod's over).
	Guest netip.Prefix
	// Ports to forward (masquerade); nil forwards every TCP and UDP port.
	Ports []v1.Port
	// Hostname is handed to the guest by DHCP.
	Hostname string
}

// Plans is the plan of every interface of vmi, in spec order.
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
		if len(plans) > 0 {
			return nil, fmt.Errorf("interface %s: only one interface can use the pod network", iface.Name)
		}
		p := Plan{
			Interface: iface.Name,
			Bridge:    fmt.Sprintf("hangar-br%d", i),
			Tap:       fmt.Sprintf("hangar-tap%d", i),
			// The pod's hostname, so the guest and its pod agree.
			Hostname: layout.Hostname(vmi.Name, vmi.Spec.Hostname),
		}
		switch {
		case iface.Masquerade != nil:
			cidr := n.Pod.VMNetworkCIDR
			if cidr == "" {
				cidr = DefaultVMNetworkCIDR
			}
			gw, guest, err := addresses(cidr)
			if err != nil {
				return nil, fmt.Errorf("interface %s: vmNetworkCIDR: %w", iface.Name, err)
			}
			p.Binding, p.MAC, p.Gateway, p.Guest, p.Ports = BindingMasquerade, domain.MACAddress(vmi, iface), gw, guest, iface.Ports
		case iface.Bridge != nil:
			// KubeVirt's fixed link-local server address, one per interface index; a /32
			// routes nothing, so the pod's namespace keeps no route of the pod network.
			p.Binding, p.Gateway = BindingBridge, netip.PrefixFrom(netip.AddrFrom4([4]byte{169, 254, 75, byte(10 + i)}), 32)
			if iface.MacAddress != "" {
				p.MAC = domain.MACAddress(vmi, iface)
			}
		default:
			return nil, fmt.Errorf("interface %s: only the masquerade and bridge bindings are supported", iface.Name)
		}
		plans = append(plans, p)
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
