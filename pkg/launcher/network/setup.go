package network

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
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
	h, err := openHandle(netns)
	if err != nil {
		return Pod{}, err
	}
	defer h.Close()
	return lookupPod(h)
}

// lookupPod reads the IPv4 default route of the main table (`ip -4 route show default`)
// and the global address of the link it leaves through.
func lookupPod(h *netlink.Handle) (Pod, error) {
	routes, err := retryInterrupted(func() ([]netlink.Route, error) { return h.RouteList(nil, netlink.FAMILY_V4) })
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
	addrs, err := globalIPv4(h, l)
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

// Attachment is what one plan's interface gets in the pod: what the launcher serves by DHCP
// and reports.
type Attachment struct {
	Plan Plan
	// PodInterface is the pod interface the guest's traffic leaves through.
	PodInterface string
	// PodIP is the address the instance is reached at.
	PodIP netip.Addr
	// MAC is the guest's MAC.
	MAC net.HardwareAddr
	// Lease is the guest's address, gateway and MTU (0: the guest's default).
	Lease  netip.Prefix
	Router netip.Addr
	MTU    int
}

// attachment is a's values for plan p once the pod side is known.
func attachment(p Plan, pod Pod, bridged *BridgedPod) (Attachment, error) {
	a := Attachment{Plan: p, PodInterface: pod.Interface, PodIP: pod.IP, Lease: p.Guest, Router: p.Gateway.Addr()}
	var podMAC net.HardwareAddr
	if bridged != nil {
		a.PodInterface, a.PodIP, a.Lease, a.Router, a.MTU = bridged.Interface, bridged.IP.Addr(), bridged.IP, bridged.Gateway, bridged.MTU
		podMAC = bridged.MAC
	}
	mac, err := guestMAC(p, podMAC)
	if err != nil {
		return a, fmt.Errorf("interface %s: %w", p.Interface, err)
	}
	a.MAC = mac
	return a, nil
}

// guestMAC is the guest's MAC for plan p: the spec's, else podMAC (for a bridge binding the
// pod interface's original MAC, which the guest takes over).
func guestMAC(p Plan, podMAC net.HardwareAddr) (net.HardwareAddr, error) {
	if p.MAC == "" {
		return podMAC, nil
	}
	return net.ParseMAC(p.MAC)
}

// InspectPod reads, without changing anything, what SetupPod made of plans in netns (nil for
// the caller's): the launcher's view when virt-handler did the setup.
func InspectPod(netns *os.File, plans []Plan) ([]Attachment, error) {
	h, err := openHandle(netns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	var pod Pod
	var atts []Attachment
	for _, p := range plans {
		var bridged *BridgedPod
		switch p.Binding {
		case BindingBridge:
			b, ok, err := readBridgedPod(h, p)
			if err != nil {
				return nil, fmt.Errorf("interface %s: %w", p.Interface, err)
			}
			if !ok {
				return nil, fmt.Errorf("interface %s: bridge %s is not set up", p.Interface, p.Bridge)
			}
			bridged = &b
		default:
			if !pod.IP.IsValid() {
				if pod, err = lookupPod(h); err != nil {
					return nil, err
				}
			}
		}
		a, err := attachment(p, pod, bridged)
		if err != nil {
			return nil, err
		}
		atts = append(atts, a)
	}
	return atts, nil
}

// SetupPod makes the bridge, tap, forwarding and nftables rules of plans in netns (nil for
// the caller's), all from one thread inside the namespace: netlink for links and
// addresses, knftables for the rules, /proc/sys/net for the sysctls. Links that exist
// already are kept and what the bridge binding took from the pod interface is read back
// from its bridge, so it can run again (a restarted handler).
func SetupPod(ctx context.Context, netns *os.File, plans []Plan) ([]Attachment, error) {
	var atts []Attachment
	err := inNamespace(netns, func(h *netlink.Handle) error {
		for _, p := range plans {
			var a Attachment
			var err error
			if p.Binding == BindingBridge {
				var bridged BridgedPod
				if bridged, err = setupBridge(ctx, h, p); err == nil {
					a, err = attachment(p, Pod{}, &bridged)
				}
			} else {
				var pod Pod
				if pod, err = setupMasquerade(ctx, h, p); err == nil {
					a, err = attachment(p, pod, nil)
				}
			}
			if err != nil {
				return fmt.Errorf("interface %s: %w", p.Interface, err)
			}
			atts = append(atts, a)
		}
		return nil
	})
	return atts, err
}

// addTap makes the guest's tap, persistent and owned by the launcher's user: QEMU (that
// user, without CAP_NET_ADMIN) may then attach to it through /dev/net/tun. The tap is made
// in the namespace of the calling thread, whatever h's.
func addTap(h *netlink.Handle, name string) (netlink.Link, error) {
	tap := &netlink.Tuntap{
		LinkAttrs: netlink.LinkAttrs{Name: name},
		Mode:      netlink.TUNTAP_MODE_TAP,
		Flags:     netlink.TUNTAP_NO_PI | netlink.TUNTAP_TUN_EXCL,
		Owner:     layout.LauncherUID,
		Group:     layout.LauncherUID,
	}
	if err := h.LinkAdd(tap); err != nil {
		return nil, fmt.Errorf("link %s: add tap: %w", name, err)
	}
	l, err := h.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	return l, nil
}

// ensureBridge is the bridge called name, added when missing.
func ensureBridge(h *netlink.Handle, name string) (netlink.Link, error) {
	if l, ok, err := linkByName(h, name); err != nil {
		return nil, err
	} else if ok {
		if l.Type() != "bridge" {
			return nil, fmt.Errorf("link %s: a %s, not a bridge", name, l.Type())
		}
		return l, nil
	}
	if err := h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		return nil, fmt.Errorf("link %s: add bridge: %w", name, err)
	}
	l, err := h.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	return l, nil
}

func setupMasquerade(ctx context.Context, h *netlink.Handle, p Plan) (Pod, error) {
	pod, err := lookupPod(h)
	if err != nil {
		return pod, err
	}
	br, err := ensureBridge(h, p.Bridge)
	if err != nil {
		return pod, err
	}
	if err := h.AddrReplace(br, ipv4Addr(p.Gateway)); err != nil {
		return pod, fmt.Errorf("link %s: address %s: %w", p.Bridge, p.Gateway, err)
	}
	tap, exists, err := linkByName(h, p.Tap)
	if err != nil {
		return pod, err
	}
	if !exists {
		if tap, err = addTap(h, p.Tap); err != nil {
			return pod, err
		}
		if err := h.LinkSetMaster(tap, br); err != nil {
			return pod, fmt.Errorf("link %s: set master %s: %w", p.Tap, p.Bridge, err)
		}
	}
	for _, l := range []netlink.Link{tap, br} {
		if err := h.LinkSetUp(l); err != nil {
			return pod, fmt.Errorf("link %s: set up: %w", l.Attrs().Name, err)
		}
	}
	if err := loadRules(ctx, knftables.IPv4Family, func(tx *knftables.Transaction) error {
		return masqueradeRules(tx, p, pod.Interface)
	}); err != nil {
		return pod, err
	}
	if err := setSysctl("ipv4/ip_forward", 1); err != nil {
		return pod, err
	}
	return pod, allowLauncherDHCP()
}

// dhcpServerPort is the port the launcher's DHCP server listens on.
const dhcpServerPort = 67

// allowLauncherDHCP lets the launcher, an unprivileged process, bind the DHCP server's port
// in its pod's network namespace: ports from 67 up become unprivileged there. The sysctl is
// the namespace's own (Kubernetes counts it among the safe sysctls a pod may set itself), so
// nothing changes outside the pod. Called on a thread inside the namespace.
func allowLauncherDHCP() error {
	return setSysctl("ipv4/ip_unprivileged_port_start", dhcpServerPort)
}
