// Package setup makes a launcher pod's network for its guest: the bridge, the tap, addresses,
// sysctls (netlink, /proc/sys/net) and the nftables rules (knftables) each binding needs.
//
// Privileged: it needs CAP_NET_ADMIN in the pod's network namespace. virt-handler runs it from
// the host, on an OS thread of its own that entered the namespace through a descriptor opened
// from a verified launcher process and that ends with the setup, so nothing else of the handler
// ever runs in a pod's namespace. Nothing in it trusts what the pod's namespace holds: names
// written into rules are checked, and every step checks or replaces, so it can run again.
package setup

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"sigs.k8s.io/knftables"

	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/pkg/podnetwork"
	"github.com/hangarvm/hangar/pkg/podnetwork/internal/nlutil"
)

// Pod makes the bridge, tap, forwarding and nftables rules of plans in netns (nil for
// the caller's), all from one thread inside the namespace: netlink for links and
// addresses, knftables for the rules, /proc/sys/net for the sysctls. Links that exist
// already are kept and what the bridge binding took from the pod interface is read back
// from its bridge, so it can run again (a restarted handler).
func Pod(ctx context.Context, netns *os.File, plans []podnetwork.Plan) ([]podnetwork.Attachment, error) {
	var atts []podnetwork.Attachment
	err := inNamespace(netns, func(h *netlink.Handle) error {
		for _, p := range plans {
			var a podnetwork.Attachment
			var err error
			if p.Binding == podnetwork.BindingBridge {
				var bridged podnetwork.BridgedPod
				if bridged, err = setupBridge(ctx, h, p); err == nil {
					a, err = podnetwork.NewAttachment(p, podnetwork.Pod{}, &bridged)
				}
			} else {
				var pod podnetwork.Pod
				if pod, err = setupMasquerade(ctx, h, p); err == nil {
					a, err = podnetwork.NewAttachment(p, pod, nil)
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

func setupMasquerade(ctx context.Context, h *netlink.Handle, p podnetwork.Plan) (podnetwork.Pod, error) {
	pod, err := podnetwork.ReadPod(h)
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
	tap, exists, err := nlutil.LinkByName(h, p.Tap)
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
	mac, err := net.ParseMAC(p.MAC)
	if err != nil {
		return pod, fmt.Errorf("guest MAC: %w", err)
	}
	if err := loadRules(ctx, knftables.BridgeFamily, func(tx *knftables.Transaction) error {
		return guestGuardRules(tx, p.Tap, mac, p.Guest.Addr())
	}); err != nil {
		return pod, err
	}
	if err := setSysctl("ipv4/ip_forward", 1); err != nil {
		return pod, err
	}
	return pod, allowLauncherDHCP()
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
	if l, ok, err := nlutil.LinkByName(h, name); err != nil {
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

// allowLauncherDHCP lets the launcher, an unprivileged process, bind the DHCP server's port
// in its pod's network namespace: ports from 67 up become unprivileged there. The sysctl is
// the namespace's own (Kubernetes counts it among the safe sysctls a pod may set itself), so
// nothing changes outside the pod. Called on a thread inside the namespace.
func allowLauncherDHCP() error {
	return setSysctl("ipv4/ip_unprivileged_port_start", podnetwork.DHCPServerPort)
}
