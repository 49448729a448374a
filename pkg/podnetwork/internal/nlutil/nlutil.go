// Package nlutil holds the netlink helpers both sides of the pod network use: reading links,
// routes and addresses of a pod's network namespace.
package nlutil

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// OpenHandle is a netlink handle on netns (nil: the caller's namespace). The namespace is
// an open descriptor, never a path someone could swap: virt-handler opened it from a
// verified launcher process.
func OpenHandle(ns *os.File) (*netlink.Handle, error) {
	if ns == nil {
		h, err := netlink.NewHandle()
		if err != nil {
			return nil, fmt.Errorf("netlink: %w", err)
		}
		return h, nil
	}
	h, err := netlink.NewHandleAt(netns.NsHandle(ns.Fd()))
	if err != nil {
		return nil, fmt.Errorf("netlink in the pod's network namespace: %w", err)
	}
	return h, nil
}

// LinkByName is the link called name; ok is false when there is none.
func LinkByName(h *netlink.Handle, name string) (l netlink.Link, ok bool, err error) {
	l, err = h.LinkByName(name)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("link %s: %w", name, err)
	}
	return l, true, nil
}

// RetryInterrupted repeats a netlink dump the kernel interrupted (the table changed while
// it was read), so what is returned is consistent.
func RetryInterrupted[T any](dump func() ([]T, error)) ([]T, error) {
	for range 5 {
		out, err := dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	return dump()
}

// GlobalIPv4 are the link's IPv4 addresses of global scope (what `ip -4 addr` calls
// "scope global").
func GlobalIPv4(h *netlink.Handle, l netlink.Link) ([]netip.Prefix, error) {
	addrs, err := RetryInterrupted(func() ([]netlink.Addr, error) { return h.AddrList(l, netlink.FAMILY_V4) })
	if err != nil {
		return nil, fmt.Errorf("link %s: list addresses: %w", l.Attrs().Name, err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if a.Scope != int(netlink.SCOPE_UNIVERSE) || a.IPNet == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP.To4())
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip, ones))
	}
	return out, nil
}
