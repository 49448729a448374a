package podnetwork

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/hangarvm/hangar/pkg/podnetwork/internal/nlutil"
)

// bridgeRecordTag starts the alias of a bridge binding's bridge. After the first setup the
// pod interface no longer holds the pod's address, so what setup learnt from it is kept on
// the bridge itself: it lives exactly as long as the pod's namespace, and a restarted
// virt-handler and the (unprivileged) launcher both read it over netlink.
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

// ReadBridgedPod is the record on the plan's bridge; ok is false before the first setup
// has written it.
func ReadBridgedPod(h *netlink.Handle, p Plan) (BridgedPod, bool, error) {
	br, exists, err := nlutil.LinkByName(h, p.Bridge)
	if err != nil || !exists {
		return BridgedPod{}, false, err
	}
	return parseBridgedPod(br.Attrs().Alias)
}
