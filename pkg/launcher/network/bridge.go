package network

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// bridgeRecordTag starts the alias of a bridge binding's bridge. After the first setup the
// pod interface no longer holds the pod's address, so what setup learnt from it is kept on
// the bridge itself: it lives exactly as long as the pod's namespace, and a restarted
// virt-handler and the (unprivileged) launcher both read it with `ip link show`.
const bridgeRecordTag = "hangar-bridge/v1"

// BridgedPod is what the bridge binding takes over from the pod interface.
type BridgedPod struct {
	// Interface is the pod interface, a port of the bridge after setup.
	Interface string
	// IP is the pod's address and prefix: the guest's lease.
	IP netip.Prefix
	// Gateway is the pod's default route's next hop (invalid when the route has none).
	Gateway netip.Addr
	// MAC is the pod interface's original MAC, which the guest takes unless the spec names
	// one: the CNI's neighbour entries for the pod's address keep working.
	MAC net.HardwareAddr
	MTU int
}

// String is the bridge's alias for p (at most 255 bytes, IFALIASZ).
func (p BridgedPod) String() string {
	gw := "none"
	if p.Gateway.IsValid() {
		gw = p.Gateway.String()
	}
	return fmt.Sprintf("%s if=%s ip=%s gw=%s mac=%s mtu=%d", bridgeRecordTag, p.Interface, p.IP, gw, p.MAC, p.MTU)
}

// parseBridgedPod reads a bridge's alias; ok is false when it holds no complete record.
func parseBridgedPod(alias string) (p BridgedPod, ok bool, err error) {
	fields := strings.Fields(alias)
	if len(fields) == 0 || fields[0] != bridgeRecordTag {
		return p, false, nil
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "if":
			p.Interface = v
		case "ip":
			p.IP, err = netip.ParsePrefix(v)
		case "gw":
			if v != "none" {
				p.Gateway, err = netip.ParseAddr(v)
			}
		case "mac":
			p.MAC, err = net.ParseMAC(v)
		case "mtu":
			p.MTU, err = strconv.Atoi(v)
		default:
			continue
		}
		if err != nil {
			return p, false, fmt.Errorf("bridge record %q: %s: %w", alias, k, err)
		}
		seen[k] = true
	}
	for _, k := range []string{"if", "ip", "gw", "mac", "mtu"} {
		if !seen[k] {
			return p, false, fmt.Errorf("bridge record %q: no %s", alias, k)
		}
	}
	return p, true, nil
}

// replacementMAC is the pod interface's MAC once the guest has taken its original: derived
// from the original, so a repeated setup sets the same one; locally administered, unicast.
func replacementMAC(orig net.HardwareAddr) net.HardwareAddr {
	sum := sha256.Sum256(append([]byte("hangar-bridge-port/"), orig...))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&^0x01 | 0x02
	return mac
}

// BridgeNFTables keeps DHCP inside the pod for a bridge binding: the guest's requests do
// not reach the pod network, no other server there answers the guest, and the launcher's
// answers stay on the bridge's guest side.
func BridgeNFTables(podIface string) string {
	return fmt.Sprintf(`table bridge hangar
delete table bridge hangar
table bridge hangar {
	chain forward {
		type filter hook forward priority filter; policy accept;
		oifname %[1]q udp dport 67 drop
		iifname %[1]q udp dport 68 drop
	}
	chain output {
		type filter hook output priority filter; policy accept;
		oifname %[1]q udp dport 68 drop
	}
}
`, podIface)
}

// link is what `ip -j link show` / `ip -j addr show` say of one link.
type link struct {
	Name     string `json:"ifname"`
	MTU      int    `json:"mtu"`
	Address  string `json:"address"`
	Master   string `json:"master"`
	Alias    string `json:"ifalias"`
	AddrInfo []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		PrefixLen int    `json:"prefixlen"`
		Scope     string `json:"scope"`
	} `json:"addr_info"`
}

// showLink reads a link and its addresses; ok is false when it does not exist. (The alias
// shows only in `ip link`, the addresses only in `ip addr`.)
func (r runner) showLink(ctx context.Context, name string) (l link, ok bool, err error) {
	out, err := r.run(ctx, "", "ip", "-j", "link", "show", "dev", name)
	if err != nil {
		return l, false, nil
	}
	var links []link
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		return l, false, fmt.Errorf("ip link show %s: %q: %v", name, out, err)
	}
	l = links[0]
	if out, err = r.run(ctx, "", "ip", "-j", "addr", "show", "dev", name); err != nil {
		return l, false, err
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		return l, false, fmt.Errorf("ip addr show %s: %q: %v", name, out, err)
	}
	l.AddrInfo = links[0].AddrInfo
	return l, true, nil
}

// readBridgedPod is the record on the plan's bridge; ok is false before the first setup
// has written it.
func (r runner) readBridgedPod(ctx context.Context, p Plan) (BridgedPod, bool, error) {
	br, exists, err := r.showLink(ctx, p.Bridge)
	if err != nil || !exists {
		return BridgedPod{}, false, err
	}
	return parseBridgedPod(br.Alias)
}

// lookupBridgedPod reads the pod interface before the bridge binding takes it over.
func (r runner) lookupBridgedPod(ctx context.Context) (BridgedPod, error) {
	pod, err := lookupPod(ctx, r)
	if err != nil {
		return BridgedPod{}, err
	}
	l, _, err := r.showLink(ctx, pod.Interface)
	if err != nil {
		return BridgedPod{}, err
	}
	mac, err := net.ParseMAC(l.Address)
	if err != nil || len(mac) != 6 {
		return BridgedPod{}, fmt.Errorf("pod interface %s: not an Ethernet link (address %q)", pod.Interface, l.Address)
	}
	return BridgedPod{Interface: pod.Interface, IP: pod.Prefix, Gateway: pod.Gateway, MAC: mac, MTU: l.MTU}, nil
}

// setupBridge hands the pod interface over to the guest: a bridge with the interface (new
// MAC, no IPv4 address) and the tap as ports, and the link-local address the DHCP server
// answers from. Every step checks or replaces, so it can run again at any point.
func (r runner) setupBridge(ctx context.Context, p Plan) (BridgedPod, error) {
	pod, recorded, err := r.readBridgedPod(ctx, p)
	if err != nil {
		return pod, err
	}
	if !recorded {
		// The pod interface still has everything: nothing is taken from it before the
		// record is on the bridge.
		if pod, err = r.lookupBridgedPod(ctx); err != nil {
			return pod, err
		}
		if _, exists, err := r.showLink(ctx, p.Bridge); err != nil {
			return pod, err
		} else if !exists {
			if _, err := r.run(ctx, "", "ip", "link", "add", p.Bridge, "type", "bridge"); err != nil {
				return pod, err
			}
		}
		if _, err := r.run(ctx, "", "ip", "link", "set", p.Bridge, "alias", pod.String()); err != nil {
			return pod, err
		}
	}
	_, tapExists, err := r.showLink(ctx, p.Tap)
	if err != nil {
		return pod, err
	}
	for _, s := range bridgeSteps(p, pod, tapExists) {
		if _, err := r.run(ctx, "", s[0], s[1:]...); err != nil {
			return pod, err
		}
	}
	if _, err := r.run(ctx, BridgeNFTables(pod.Interface), "nft", "-f", "-"); err != nil {
		return pod, err
	}
	if err := r.allowLauncherDHCP(ctx); err != nil {
		return pod, err
	}
	return pod, nil
}

// bridgeSteps are the commands that give the recorded pod interface to the guest; each
// checks or replaces, so they can run again.
func bridgeSteps(p Plan, pod BridgedPod, tapExists bool) [][]string {
	mtu := strconv.Itoa(pod.MTU)
	steps := [][]string{
		{"ip", "link", "set", p.Bridge, "mtu", mtu},
		{"ip", "addr", "replace", p.Gateway.String(), "dev", p.Bridge},
		// The guest answers for the pod's address now; the pod's frames must not carry its MAC.
		{"ip", "link", "set", pod.Interface, "address", replacementMAC(pod.MAC).String()},
		{"ip", "-4", "addr", "flush", "dev", pod.Interface},
		{"ip", "link", "set", pod.Interface, "master", p.Bridge},
	}
	if !tapExists {
		// Owned by the launcher's user: QEMU (that user, without CAP_NET_ADMIN) may then
		// attach to the persistent tap through /dev/net/tun.
		steps = append(steps, []string{"ip", "tuntap", "add", "dev", p.Tap, "mode", "tap", "user", fmt.Sprint(api.LauncherUID), "group", fmt.Sprint(api.LauncherUID)})
	}
	return append(steps,
		[]string{"ip", "link", "set", p.Tap, "mtu", mtu, "master", p.Bridge},
		[]string{"ip", "link", "set", p.Tap, "up"},
		[]string{"ip", "link", "set", pod.Interface, "up"},
		[]string{"ip", "link", "set", p.Bridge, "up"},
	)
}
