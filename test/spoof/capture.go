// Package spoof serves the tests that hold a guest to its own addresses: the attempts a
// tenant types into the busybox test guest to send as someone else, and a capture of the
// Ethernet frames that arrive on a link (as tcpdump would) with a check of their sources. The
// node tests capture on the pod network's side of a test pod's veth, the end-to-end tests on
// the node's side of a real launcher pod's. Linux only; needs CAP_NET_RAW in the link's
// network namespace.
package spoof

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Frame is what the tests read of one captured Ethernet frame.
type Frame struct {
	Src       net.HardwareAddr
	EtherType uint16
	// IPSrc and IPDst are the IPv4 or IPv6 addresses; ARPSender and ARPSenderMAC ARP's
	// sender fields.
	IPSrc, IPDst netip.Addr
	ARPSender    netip.Addr
	ARPSenderMAC net.HardwareAddr
}

func (f Frame) String() string {
	switch {
	case f.IPSrc.IsValid():
		return fmt.Sprintf("%s %s -> %s", f.Src, f.IPSrc, f.IPDst)
	case f.ARPSender.IsValid():
		return fmt.Sprintf("%s ARP sender %s %s", f.Src, f.ARPSenderMAC, f.ARPSender)
	}
	return fmt.Sprintf("%s type %#04x", f.Src, f.EtherType)
}

// Parse reads the fields of Frame from an Ethernet frame.
func Parse(b []byte) (Frame, bool) {
	if len(b) < 14 {
		return Frame{}, false
	}
	f := Frame{Src: net.HardwareAddr(append([]byte(nil), b[6:12]...)), EtherType: binary.BigEndian.Uint16(b[12:14])}
	p := b[14:]
	switch f.EtherType {
	case unix.ETH_P_IP:
		if len(p) >= 20 {
			f.IPSrc, f.IPDst = netip.AddrFrom4([4]byte(p[12:16])), netip.AddrFrom4([4]byte(p[16:20]))
		}
	case unix.ETH_P_IPV6:
		if len(p) >= 40 {
			f.IPSrc, f.IPDst = netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40]))
		}
	case unix.ETH_P_ARP:
		if len(p) >= 28 {
			f.ARPSenderMAC = net.HardwareAddr(append([]byte(nil), p[8:14]...))
			f.ARPSender = netip.AddrFrom4([4]byte(p[14:18]))
		}
	}
	return f, true
}

// Capture records the frames arriving on one link from its peer; not those its own
// namespace sends.
type Capture struct {
	fd   int
	mu   sync.Mutex
	seen []Frame
	done chan struct{}
	once sync.Once
}

// Start captures on the link named ifname in the network namespace at netnsPath.
func Start(netnsPath, ifname string) (*Capture, error) {
	return start(netnsPath, func() (*net.Interface, error) { return net.InterfaceByName(ifname) })
}

// StartIndex captures on the link of index ifindex in the network namespace at netnsPath:
// the peer of a veth, whose iflink names it.
func StartIndex(netnsPath string, ifindex int) (*Capture, error) {
	return start(netnsPath, func() (*net.Interface, error) { return net.InterfaceByIndex(ifindex) })
}

func start(netnsPath string, link func() (*net.Interface, error)) (*Capture, error) {
	c := &Capture{done: make(chan struct{})}
	var err error
	if err := inNetns(netnsPath, func() error {
		ifi, err := link()
		if err != nil {
			return err
		}
		if c.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL))); err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		if err := unix.Bind(c.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			unix.Close(c.fd)
			return fmt.Errorf("bind to %s: %w", ifi.Name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err = unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000}); err != nil {
		unix.Close(c.fd)
		return nil, err
	}
	go c.read()
	return c, nil
}

func (c *Capture) read() {
	defer close(c.done)
	buf := make([]byte, 65536)
	for {
		n, from, err := unix.Recvfrom(c.fd, buf, 0)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if f, ok := Parse(buf[:n]); ok {
			c.mu.Lock()
			c.seen = append(c.seen, f)
			c.mu.Unlock()
		}
	}
}

// Frames returns what was captured so far.
func (c *Capture) Frames() []Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Frame(nil), c.seen...)
}

// Stop ends the capture; what was captured stays readable.
func (c *Capture) Stop() {
	c.once.Do(func() {
		unix.Close(c.fd)
		<-c.done
	})
}

// Saw says whether any captured frame matches.
func (c *Capture) Saw(match func(Frame) bool) bool {
	for _, f := range c.Frames() {
		if match(f) {
			return true
		}
	}
	return false
}

// Identity is every source a frame may carry: its MACs, and its IP addresses (IPv4 and IPv6
// sources, ARP senders).
type Identity struct {
	MACs []net.HardwareAddr
	IPs  []netip.Addr
}

func (id Identity) hasMAC(m net.HardwareAddr) bool {
	for _, ok := range id.MACs {
		if ok.String() == m.String() {
			return true
		}
	}
	return false
}

func (id Identity) hasIP(a netip.Addr) bool {
	for _, ok := range id.IPs {
		if ok == a {
			return true
		}
	}
	return false
}

// Foreign lists the frames whose source (MAC, IP source, ARP sender) is not id's.
func (id Identity) Foreign(frames []Frame) []string {
	var bad []string
	for _, f := range frames {
		ok := id.hasMAC(f.Src)
		if f.IPSrc.IsValid() {
			ok = ok && id.hasIP(f.IPSrc)
		}
		if f.ARPSender.IsValid() {
			ok = ok && id.hasIP(f.ARPSender) && id.hasMAC(f.ARPSenderMAC)
		}
		if !ok {
			bad = append(bad, f.String())
		}
	}
	return bad
}

// LinkLocal is the IPv6 link-local address Linux gives an interface of this MAC (EUI-64).
func LinkLocal(mac net.HardwareAddr) netip.Addr {
	a := [16]byte{0: 0xfe, 1: 0x80}
	a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15] = mac[0]^0x02, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]
	return netip.AddrFrom16(a)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// inNetns runs f on an OS thread inside the network namespace at path; sockets made there
// stay in it. A thread that cannot return is left locked, so that it dies with f's goroutine.
func inNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer self.Close()
		target, err := os.Open(path)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("leave %s: %w", path, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
