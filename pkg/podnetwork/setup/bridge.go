package setup

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"
	"sigs.k8s.io/knftables"

	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/pkg/podnetwork"
	"github.com/hangarvm/hangar/pkg/podnetwork/internal/nlutil"
)

// setupBridge hands the pod interface over to the guest: a bridge with the interface (new
// MAC, no IPv4 address) and the tap as ports, and the link-local address the DHCP server
// answers from. Every step checks or replaces, so it can run again at any point.
func setupBridge(ctx context.Context, h *netlink.Handle, p podnetwork.Plan) (podnetwork.BridgedPod, error) {
	pod, recorded, err := podnetwork.ReadBridgedPod(h, p)
	if err != nil {
		return pod, err
	}
	if !recorded {
		// The pod interface still has everything: nothing is taken from it before the
		// record is on the bridge.
		if pod, err = lookupBridgedPod(h); err != nil {
			return pod, err
		}
		br, err := ensureBridge(h, p.Bridge)
		if err != nil {
			return pod, err
		}
		if err := h.LinkSetAlias(br, pod.String()); err != nil {
			return pod, fmt.Errorf("link %s: set alias: %w", p.Bridge, err)
		}
	}
	links := bridgeLinks{}
	if links.bridge, err = ensureBridge(h, p.Bridge); err != nil {
		return pod, err
	}
	podLink, ok, err := nlutil.LinkByName(h, pod.Interface)
	if err != nil {
		return pod, err
	}
	if !ok {
		return pod, fmt.Errorf("pod interface %s recorded on %s is gone", pod.Interface, p.Bridge)
	}
	links.pod = podLink
	if links.tap, _, err = nlutil.LinkByName(h, p.Tap); err != nil {
		return pod, err
	}
	for _, s := range bridgeSteps(h, p, pod, &links) {
		if err := s.do(); err != nil {
			return pod, fmt.Errorf("%s: %w", s.what, err)
		}
	}
	mac, err := podnetwork.GuestMAC(p, pod.MAC)
	if err != nil {
		return pod, fmt.Errorf("guest MAC: %w", err)
	}
	if err := loadRules(ctx, knftables.BridgeFamily, func(tx *knftables.Transaction) error {
		return bridgeRules(tx, pod.Interface, p.Tap, mac, pod.IP.Addr())
	}); err != nil {
		return pod, err
	}
	return pod, allowLauncherDHCP()
}

// lookupBridgedPod reads the pod interface before the bridge binding takes it over.
func lookupBridgedPod(h *netlink.Handle) (podnetwork.BridgedPod, error) {
	pod, err := podnetwork.ReadPod(h)
	if err != nil {
		return podnetwork.BridgedPod{}, err
	}
	l, err := h.LinkByName(pod.Interface)
	if err != nil {
		return podnetwork.BridgedPod{}, fmt.Errorf("link %s: %w", pod.Interface, err)
	}
	mac := l.Attrs().HardwareAddr
	if len(mac) != 6 {
		return podnetwork.BridgedPod{}, fmt.Errorf("pod interface %s: not an Ethernet link (address %q)", pod.Interface, mac)
	}
	return podnetwork.BridgedPod{Interface: pod.Interface, IP: pod.Prefix, Gateway: pod.Gateway,
		MAC: slices.Clone(mac), MTU: l.Attrs().MTU}, nil
}

// replacementMAC is the pod interface's MAC once the guest has taken its original: derived
// from the original, so a repeated setup sets the same one; locally administered, unicast.
func replacementMAC(orig net.HardwareAddr) net.HardwareAddr {
	sum := sha256.Sum256(append([]byte("hangar-bridge-port/"), orig...))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&^0x01 | 0x02
	return mac
}

// bridgeLinks are the links of a bridge binding; tap is nil until it exists.
type bridgeLinks struct {
	bridge, pod, tap netlink.Link
}

// step is one change to a link; what names the link and the change, for errors.
type step struct {
	what string
	do   func() error
}

// bridgeSteps give the recorded pod interface to the guest; each checks or replaces, so
// they can run again.
func bridgeSteps(h *netlink.Handle, p podnetwork.Plan, pod podnetwork.BridgedPod, l *bridgeLinks) []step {
	podIf := pod.Interface
	newMAC := replacementMAC(pod.MAC)
	steps := []step{
		{fmt.Sprintf("link %s: set mtu %d", p.Bridge, pod.MTU), func() error { return h.LinkSetMTU(l.bridge, pod.MTU) }},
		{fmt.Sprintf("link %s: address %s", p.Bridge, p.Gateway), func() error { return h.AddrReplace(l.bridge, ipv4Addr(p.Gateway)) }},
		// The guest answers for the pod's address now; the pod's frames must not carry its MAC.
		{fmt.Sprintf("link %s: set address %s", podIf, newMAC), func() error { return h.LinkSetHardwareAddr(l.pod, newMAC) }},
		{fmt.Sprintf("link %s: flush IPv4 addresses", podIf), func() error { return flushIPv4(h, l.pod) }},
		{fmt.Sprintf("link %s: set master %s", podIf, p.Bridge), func() error { return h.LinkSetMaster(l.pod, l.bridge) }},
		// Nothing behind the pod interface is ever the guest, yet the pod network may send
		// the guest's own frames back: a CNI bridge in hairpin mode (the bridge plugin's
		// hairpinMode, flannel's default) reflects its broadcasts, its ARP requests among
		// them. Learnt from those, the guest's MAC would sit on this port and the bridge
		// would drop what the pod network sends the guest, the ARP replies first. KubeVirt
		// turns learning off on this port too. (A port setting: after set master.)
		{fmt.Sprintf("link %s: learning off", podIf), func() error { return h.LinkSetLearning(l.pod, false) }},
	}
	if l.tap == nil {
		steps = append(steps, step{fmt.Sprintf("link %s: add tap for uid %d", p.Tap, layout.LauncherUID), func() (err error) {
			l.tap, err = addTap(h, p.Tap)
			return err
		}})
	}
	return append(steps,
		step{fmt.Sprintf("link %s: set mtu %d", p.Tap, pod.MTU), func() error { return h.LinkSetMTU(l.tap, pod.MTU) }},
		step{fmt.Sprintf("link %s: set master %s", p.Tap, p.Bridge), func() error { return h.LinkSetMaster(l.tap, l.bridge) }},
		step{fmt.Sprintf("link %s: set up", p.Tap), func() error { return h.LinkSetUp(l.tap) }},
		step{fmt.Sprintf("link %s: set up", podIf), func() error { return h.LinkSetUp(l.pod) }},
		step{fmt.Sprintf("link %s: set up", p.Bridge), func() error { return h.LinkSetUp(l.bridge) }},
	)
}

// flushIPv4 removes every IPv4 address of l (`ip -4 addr flush`).
func flushIPv4(h *netlink.Handle, l netlink.Link) error {
	addrs, err := nlutil.RetryInterrupted(func() ([]netlink.Addr, error) { return h.AddrList(l, netlink.FAMILY_V4) })
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := h.AddrDel(l, &a); err != nil {
			return fmt.Errorf("%s: %w", a.IPNet, err)
		}
	}
	return nil
}
