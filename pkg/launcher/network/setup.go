package network

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"github.com/hangarvm/hangar/pkg/launcher/api"
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

// runner runs ip, nft and sh in a network namespace (nsenter) or, when netns is nil, in the
// caller's.
type runner struct{ netns *os.File }

// netnsFD is the descriptor the network namespace has in the child: the first of ExtraFiles.
const netnsFD = 3

func (r runner) run(ctx context.Context, stdin string, name string, args ...string) ([]byte, error) {
	var extra []*os.File
	if r.netns != nil {
		// The namespace goes to the child as an open descriptor, never as a path someone
		// could swap (virt-handler opened it from a verified launcher process).
		args = append([]string{fmt.Sprintf("--net=/proc/self/fd/%d", netnsFD), "--", name}, args...)
		name = "nsenter"
		extra = []*os.File{r.netns}
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.ExtraFiles = extra
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// LookupPod finds the pod's interface and address in netns (nil for the caller's).
func LookupPod(ctx context.Context, netns *os.File) (Pod, error) {
	return lookupPod(ctx, runner{netns})
}

func lookupPod(ctx context.Context, r runner) (Pod, error) {
	out, err := r.run(ctx, "", "ip", "-j", "-4", "route", "show", "default")
	if err != nil {
		return Pod{}, err
	}
	var routes []struct {
		Dev     string `json:"dev"`
		Gateway string `json:"gateway"`
	}
	if err := json.Unmarshal(out, &routes); err != nil || len(routes) == 0 || routes[0].Dev == "" {
		return Pod{}, fmt.Errorf("no IPv4 default route in the pod (%s)", strings.TrimSpace(string(out)))
	}
	dev := routes[0].Dev
	gw, _ := netip.ParseAddr(routes[0].Gateway) // none for a route through the link alone
	out, err = r.run(ctx, "", "ip", "-j", "-4", "addr", "show", "dev", dev)
	if err != nil {
		return Pod{}, err
	}
	var links []link
	if err := json.Unmarshal(out, &links); err != nil {
		return Pod{}, fmt.Errorf("ip addr show %s: %w", dev, err)
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if ip, err := netip.ParseAddr(a.Local); err == nil && a.Scope == "global" {
				return Pod{Interface: dev, IP: ip, Prefix: netip.PrefixFrom(ip, a.PrefixLen), Gateway: gw}, nil
			}
		}
	}
	return Pod{}, fmt.Errorf("pod interface %s has no global IPv4 address", dev)
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
	if bridged != nil {
		a.PodInterface, a.PodIP, a.Lease, a.Router, a.MTU = bridged.Interface, bridged.IP.Addr(), bridged.IP, bridged.Gateway, bridged.MTU
		a.MAC = bridged.MAC
	}
	if p.MAC != "" {
		mac, err := net.ParseMAC(p.MAC)
		if err != nil {
			return a, fmt.Errorf("interface %s: %w", p.Interface, err)
		}
		a.MAC = mac
	}
	return a, nil
}

// InspectPod reads, without changing anything, what SetupPod made of plans in netns (nil for
// the caller's): the launcher's view when virt-handler did the setup.
func InspectPod(ctx context.Context, netns *os.File, plans []Plan) ([]Attachment, error) {
	r := runner{netns}
	var pod Pod
	var atts []Attachment
	for _, p := range plans {
		var bridged *BridgedPod
		switch p.Binding {
		case BindingBridge:
			b, ok, err := r.readBridgedPod(ctx, p)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("interface %s: bridge %s is not set up", p.Interface, p.Bridge)
			}
			bridged = &b
		default:
			if !pod.IP.IsValid() {
				var err error
				if pod, err = lookupPod(ctx, r); err != nil {
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
// the caller's). Links that exist already are kept and what the bridge binding took from
// the pod interface is read back from its bridge, so it can run again (a restarted handler).
func SetupPod(ctx context.Context, netns *os.File, plans []Plan) ([]Attachment, error) {
	r := runner{netns}
	var atts []Attachment
	for _, p := range plans {
		if p.Binding == BindingBridge {
			bridged, err := r.setupBridge(ctx, p)
			if err != nil {
				return nil, fmt.Errorf("interface %s: %w", p.Interface, err)
			}
			a, err := attachment(p, Pod{}, &bridged)
			if err != nil {
				return nil, err
			}
			atts = append(atts, a)
			continue
		}
		pod, err := r.setupMasquerade(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("interface %s: %w", p.Interface, err)
		}
		a, err := attachment(p, pod, nil)
		if err != nil {
			return nil, err
		}
		atts = append(atts, a)
	}
	return atts, nil
}

func (r runner) setupMasquerade(ctx context.Context, p Plan) (Pod, error) {
	pod, err := lookupPod(ctx, r)
	if err != nil {
		return pod, err
	}
	exists := func(link string) bool {
		_, err := r.run(ctx, "", "ip", "link", "show", "dev", link)
		return err == nil
	}
	if !exists(p.Bridge) {
		if _, err := r.run(ctx, "", "ip", "link", "add", p.Bridge, "type", "bridge"); err != nil {
			return pod, err
		}
		if _, err := r.run(ctx, "", "ip", "addr", "add", p.Gateway.String(), "dev", p.Bridge); err != nil {
			return pod, err
		}
	}
	if !exists(p.Tap) {
		// Owned by the launcher's user: QEMU (that user, without CAP_NET_ADMIN) may then
		// attach to the persistent tap through /dev/net/tun.
		if _, err := r.run(ctx, "", "ip", "tuntap", "add", "dev", p.Tap, "mode", "tap", "user", fmt.Sprint(api.LauncherUID), "group", fmt.Sprint(api.LauncherUID)); err != nil {
			return pod, err
		}
		if _, err := r.run(ctx, "", "ip", "link", "set", p.Tap, "master", p.Bridge); err != nil {
			return pod, err
		}
	}
	for _, l := range []string{p.Tap, p.Bridge} {
		if _, err := r.run(ctx, "", "ip", "link", "set", l, "up"); err != nil {
			return pod, err
		}
	}
	if _, err := r.run(ctx, NFTables(p, pod.Interface), "nft", "-f", "-"); err != nil {
		return pod, err
	}
	// /proc/sys/net is the namespace's own for a process inside it.
	if _, err := r.run(ctx, "", "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"); err != nil {
		return pod, err
	}
	if err := r.allowLauncherDHCP(ctx); err != nil {
		return pod, err
	}
	return pod, nil
}

// dhcpServerPort is the port the launcher's DHCP server listens on.
const dhcpServerPort = 67

// allowLauncherDHCP lets the launcher, an unprivileged process, bind the DHCP server's port
// in its pod's network namespace: ports from 67 up become unprivileged there. The sysctl is
// the namespace's own (Kubernetes counts it among the safe sysctls a pod may set itself), so
// nothing changes outside the pod.
func (r runner) allowLauncherDHCP(ctx context.Context) error {
	_, err := r.run(ctx, "", "sh", "-c", fmt.Sprintf("echo %d > /proc/sys/net/ipv4/ip_unprivileged_port_start", dhcpServerPort))
	return err
}
