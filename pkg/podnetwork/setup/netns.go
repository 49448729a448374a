package setup

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

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
