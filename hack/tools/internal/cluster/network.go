package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The network: a host bridge whose address (HostIP) the control plane listens on, and per
// node a network namespace whose eth0 is one end of a veth pair on that bridge. Pods of node i
// are on its own CNI bridge in 10.217.i.0/24 (PodCIDR); every node and the host route each
// other node's pod network to that node's address, as a host-gw network plugin would. Nothing
// is masqueraded to the outside: the cluster reaches the host and itself, never beyond.

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// EnsureBridge makes the host bridge with the host's address.
func (s *Settings) EnsureBridge() error {
	link, err := netlink.LinkByName(s.Bridge)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if !errors.As(err, &notFound) {
			return err
		}
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: s.Bridge}}); err != nil {
			return fmt.Errorf("add bridge %s: %w", s.Bridge, err)
		}
		if link, err = netlink.LinkByName(s.Bridge); err != nil {
			return err
		}
	}
	addr := &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(s.HostIP, s.NodeCIDR.Bits()))}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("address of %s: %w", s.Bridge, err)
	}
	return netlink.LinkSetUp(link)
}

// CheckNetworkFree refuses addresses the host routes elsewhere (unless through our bridge).
func (s *Settings) CheckNetworkFree() error {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return err
	}
	bridge, _ := netlink.LinkByName(s.Bridge)
	for _, r := range routes {
		if r.Dst == nil || (bridge != nil && r.LinkIndex == bridge.Attrs().Index) {
			continue
		}
		dst, ok := netip.AddrFromSlice(r.Dst.IP)
		if !ok {
			continue
		}
		ones, _ := r.Dst.Mask.Size()
		p := netip.PrefixFrom(dst.Unmap(), ones)
		for _, ours := range []netip.Prefix{s.NodeCIDR, s.PodCIDR, s.ServiceCIDR} {
			if p.Overlaps(ours) && p.Bits() > 0 {
				return fmt.Errorf("network %s overlaps a host route to %s (set HANGAR_NODE_CIDR, HANGAR_POD_CIDR or HANGAR_SERVICE_CIDR)", ours, p)
			}
		}
	}
	return nil
}

// EnsureNodeNetwork makes the node's network namespace and its link to the bridge, with
// routes to every other node's pods; and routes on the host to the node's pods.
func (s *Settings) EnsureNodeNetwork(n *Node) error {
	if !exists(n.NetnsPath()) {
		if err := run("ip", "netns", "add", n.Netns()); err != nil {
			return err
		}
	}
	ns, err := netns.GetFromName(n.Netns())
	if err != nil {
		return fmt.Errorf("netns %s: %w", n.Netns(), err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()

	if _, err := h.LinkByName("eth0"); err != nil {
		// A veth pair: the host's end on the bridge, the node's end moved into its namespace.
		_ = netlink.LinkDel(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: n.HostLink()}}) // a half-made pair
		bridge, err := netlink.LinkByName(s.Bridge)
		if err != nil {
			return err
		}
		peer := fmt.Sprintf("hangar-p%d", n.Index)
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: n.HostLink(), MasterIndex: bridge.Attrs().Index}, PeerName: peer}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("veth for %s: %w", n.Name, err)
		}
		peerLink, err := netlink.LinkByName(peer)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetNsFd(peerLink, int(ns)); err != nil {
			return err
		}
		inner, err := h.LinkByName(peer)
		if err != nil {
			return err
		}
		if err := h.LinkSetName(inner, "eth0"); err != nil {
			return err
		}
		host, err := netlink.LinkByName(n.HostLink())
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(host); err != nil {
			return err
		}
	}
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return err
	}
	if err := h.AddrReplace(eth0, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(n.IP, s.NodeCIDR.Bits()))}); err != nil {
		return fmt.Errorf("address of %s: %w", n.Name, err)
	}
	for _, l := range []string{"lo", "eth0"} {
		link, err := h.LinkByName(l)
		if err != nil {
			return err
		}
		if err := h.LinkSetUp(link); err != nil {
			return err
		}
	}
	// The host is the default gateway: nothing lies beyond it, but components that look
	// for a default route find one.
	if err := h.RouteReplace(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: s.HostIP.AsSlice()}); err != nil {
		return fmt.Errorf("default route of %s: %w", n.Name, err)
	}
	for _, other := range s.AllNodes() {
		if other.Index == n.Index {
			continue
		}
		if err := h.RouteReplace(&netlink.Route{LinkIndex: eth0.Attrs().Index, Dst: ipNet(other.PodCIDR), Gw: other.IP.AsSlice()}); err != nil {
			return fmt.Errorf("route on %s to %s: %w", n.Name, other.PodCIDR, err)
		}
	}
	// The kernel-wide sysctls are recorded on the host; these are the node's own.
	for key, value := range map[string]string{"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1", "net.bridge.bridge-nf-call-ip6tables": "1"} {
		if err := inNetns(n, func() error { return os.WriteFile(sysctlPath(key), []byte(value), 0o644) }); err != nil {
			return fmt.Errorf("%s on %s: %w", key, n.Name, err)
		}
	}
	bridge, err := netlink.LinkByName(s.Bridge)
	if err != nil {
		return err
	}
	return netlink.RouteReplace(&netlink.Route{LinkIndex: bridge.Attrs().Index, Dst: ipNet(n.PodCIDR), Gw: n.IP.AsSlice()})
}

// EnsureServiceRoute sends the host's traffic for Services to the first node, whose
// kube-proxy translates it (and masquerades it, as it comes from outside the pod network, so
// the answers come back the same way). Tests on the host reach ClusterIPs so.
func (s *Settings) EnsureServiceRoute() error {
	bridge, err := netlink.LinkByName(s.Bridge)
	if err != nil {
		return err
	}
	return netlink.RouteReplace(&netlink.Route{LinkIndex: bridge.Attrs().Index, Dst: ipNet(s.ServiceCIDR), Gw: s.Node(1).IP.AsSlice()})
}

// RemoveNetwork deletes the nodes' network namespaces (with their links, rules and routes)
// and the bridge (with the host's routes through it).
func (s *Settings) RemoveNetwork(nodes []*Node) ([]string, error) {
	var did []string
	var errs []error
	for _, n := range nodes {
		if exists(n.NetnsPath()) {
			if err := run("ip", "netns", "del", n.Netns()); err != nil {
				errs = append(errs, err)
			} else {
				did = append(did, "deleted network namespace "+n.Netns())
			}
		}
		if l, err := netlink.LinkByName(n.HostLink()); err == nil {
			_ = netlink.LinkDel(l)
		}
	}
	if l, err := netlink.LinkByName(s.Bridge); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, "deleted bridge "+s.Bridge)
		}
	}
	return did, errors.Join(errs...)
}
