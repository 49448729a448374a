package network

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Pod is the pod's side of the network: the interface the default route leaves through and
// its IPv4 address.
type Pod struct {
	Interface string
	IP        netip.Addr
}

// runner runs ip, nft and sh in a network namespace (nsenter) or in the caller's.
type runner struct{ netns string }

func (r runner) run(ctx context.Context, stdin string, name string, args ...string) ([]byte, error) {
	if r.netns != "" {
		args = append([]string{"--net=" + r.netns, "--", name}, args...)
		name = "nsenter"
	}
	cmd := exec.CommandContext(ctx, name, args...)
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

// LookupPod finds the pod's interface and address in netns ("" for the caller's).
func LookupPod(ctx context.Context, netns string) (Pod, error) {
	r := runner{netns}
	out, err := r.run(ctx, "", "ip", "-j", "-4", "route", "show", "default")
	if err != nil {
		return Pod{}, err
	}
	var routes []struct {
		Dev string `json:"dev"`
	}
	if err := json.Unmarshal(out, &routes); err != nil || len(routes) == 0 || routes[0].Dev == "" {
		return Pod{}, fmt.Errorf("no IPv4 default route in the pod (%s)", strings.TrimSpace(string(out)))
	}
	dev := routes[0].Dev
	out, err = r.run(ctx, "", "ip", "-j", "-4", "addr", "show", "dev", dev)
	if err != nil {
		return Pod{}, err
	}
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
			Scope string `json:"scope"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return Pod{}, fmt.Errorf("ip addr show %s: %w", dev, err)
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if ip, err := netip.ParseAddr(a.Local); err == nil && a.Scope == "global" {
				return Pod{Interface: dev, IP: ip}, nil
			}
		}
	}
	return Pod{}, fmt.Errorf("pod interface %s has no global IPv4 address", dev)
}

// SetupPod makes the bridge, tap, forwarding and nftables rules of plans in netns ("" for
// the caller's). Links that exist already are kept, so it can run again (a restarted
// handler).
func SetupPod(ctx context.Context, netns string, plans []Plan) (Pod, error) {
	pod, err := LookupPod(ctx, netns)
	if err != nil {
		return pod, err
	}
	r := runner{netns}
	exists := func(link string) bool {
		_, err := r.run(ctx, "", "ip", "link", "show", "dev", link)
		return err == nil
	}
	for _, p := range plans {
		if !exists(p.Bridge) {
			if _, err := r.run(ctx, "", "ip", "link", "add", p.Bridge, "type", "bridge"); err != nil {
				return pod, err
			}
			if _, err := r.run(ctx, "", "ip", "addr", "add", p.Gateway.String(), "dev", p.Bridge); err != nil {
				return pod, err
			}
		}
		if !exists(p.Tap) {
			// Owned by root: QEMU (root in the launcher container, without CAP_NET_ADMIN) may
			// then attach to the persistent tap through /dev/net/tun.
			if _, err := r.run(ctx, "", "ip", "tuntap", "add", "dev", p.Tap, "mode", "tap", "user", "0", "group", "0"); err != nil {
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
	}
	// /proc/sys/net is the namespace's own for a process inside it.
	if _, err := r.run(ctx, "", "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"); err != nil {
		return pod, err
	}
	return pod, nil
}
