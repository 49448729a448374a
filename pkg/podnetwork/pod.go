package podnetwork

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/hangarvm/hangar/pkg/podnetwork/internal/nlutil"
)

// Pod is the pod's side of the network: the interface the default route leaves through, its
// IPv4 address and the route's next hop.
type Pod struct {
	Interface string
	IP        netip.Addr
	// Prefix is IP with its network's length.
	Prefix  netip.Prefix
	Gateway netip.Addr
}

// LookupPod finds the pod's interface and address in netns (nil for the caller's).
func LookupPod(netns *os.File) (Pod, error) {
	h, err := nlutil.OpenHandle(netns)
	if err != nil {
		return Pod{}, err
	}
	defer h.Close()
	return ReadPod(h)
}

// ReadPod reads the IPv4 default route of the main table (`ip -4 route show default`)
// and the global address of the link it leaves through.
func ReadPod(h *netlink.Handle) (Pod, error) {
	routes, err := nlutil.RetryInterrupted(func() ([]netlink.Route, error) { return h.RouteList(nil, netlink.FAMILY_V4) })
	if err != nil {
		return Pod{}, fmt.Errorf("list routes: %w", err)
	}
	var def *netlink.Route
	for i, r := range routes {
		if isDefault(r.Dst) && r.LinkIndex > 0 && r.Type == unix.RTN_UNICAST {
			def = &routes[i]
			break
		}
	}
	if def == nil {
		return Pod{}, fmt.Errorf("no IPv4 default route through a link in the pod")
	}
	l, err := h.LinkByIndex(def.LinkIndex)
	if err != nil {
		return Pod{}, fmt.Errorf("link %d of the default route: %w", def.LinkIndex, err)
	}
	dev := l.Attrs().Name
	gw, _ := netip.AddrFromSlice(def.Gw.To4()) // none for a route through the link alone
	addrs, err := nlutil.GlobalIPv4(h, l)
	if err != nil {
		return Pod{}, err
	}
	if len(addrs) == 0 {
		return Pod{}, fmt.Errorf("pod interface %s has no global IPv4 address", dev)
	}
	return Pod{Interface: dev, IP: addrs[0].Addr(), Prefix: addrs[0], Gateway: gw}, nil
}

// isDefault tells whether a route's destination is everything (nil in older netlink).
func isDefault(dst *net.IPNet) bool {
	if dst == nil {
		return true
	}
	ones, _ := dst.Mask.Size()
	return ones == 0
}

// DHCPServerPort is the port the launcher's DHCP server listens on.
const DHCPServerPort = 67
