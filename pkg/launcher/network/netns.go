package network

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// openHandle is a netlink handle on netns (nil: the caller's namespace). The namespace is
// an open descriptor, never a path someone could swap: virt-handler opened it from a
// verified launcher process.
func openHandle(ns *os.File) (*netlink.Handle, error) {
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

// inNamespace runs f on an OS thread of its own that has entered ns (nil: stays in the
// caller's), with a netlink handle there. What only exists per thread follows the
// namespace: a tap made through /dev/net/tun, /proc/sys/net, and the nft that knftables
// runs. The thread is never handed back to the Go scheduler: it ends with f, so no other
// goroutine ever runs in the pod's namespace.
func inNamespace(ns *os.File, f func(h *netlink.Handle) error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no UnlockOSThread: the runtime ends the thread with the goroutine
		if ns != nil {
			if err := netns.Set(netns.NsHandle(ns.Fd())); err != nil {
				errc <- fmt.Errorf("enter the pod's network namespace: %w", err)
				return
			}
		}
		h, err := netlink.NewHandle()
		if err != nil {
			errc <- fmt.Errorf("netlink: %w", err)
			return
		}
		defer h.Close()
		errc <- f(h)
	}()
	return <-errc
}

// linkByName is the link called name; ok is false when there is none.
func linkByName(h *netlink.Handle, name string) (l netlink.Link, ok bool, err error) {
	l, err = h.LinkByName(name)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("link %s: %w", name, err)
	}
	return l, true, nil
}

// retryInterrupted repeats a netlink dump the kernel interrupted (the table changed while
// it was read), so what is returned is consistent.
func retryInterrupted[T any](dump func() ([]T, error)) ([]T, error) {
	for range 5 {
		out, err := dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	return dump()
}

// globalIPv4 are the link's IPv4 addresses of global scope (what `ip -4 addr` calls
// "scope global").
func globalIPv4(h *netlink.Handle, l netlink.Link) ([]netip.Prefix, error) {
	addrs, err := retryInterrupted(func() ([]netlink.Addr, error) { return h.AddrList(l, netlink.FAMILY_V4) })
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

// ipv4Addr is p as a netlink address.
func ipv4Addr(p netip.Prefix) *netlink.Addr {
	a, _ := netlink.ParseAddr(p.String())
	return a
}

// sysctlPrefix is where a thread that entered a network namespace reads and writes that
// namespace's sysctls: /proc/sys/net answers for the namespace of the thread that opens it.
const sysctlPrefix = "/proc/sys/net"

// setSysctl writes a network sysctl (a path below /proc/sys/net) of the calling thread's
// namespace.
func setSysctl(name string, value int) error {
	f, err := os.OpenFile(filepath.Join(sysctlPrefix, name), os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(strconv.Itoa(value))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("sysctl net/%s=%d: %w", name, value, err)
	}
	return nil
}
