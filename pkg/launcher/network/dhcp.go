package network

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// A DHCPv4 server for exactly one client: the guest behind a bridge in the pod. It answers
// DISCOVER with an OFFER and REQUEST with an ACK (or a NAK for another address), for the
// guest's MAC only.

// Lease is what the guest gets.
type Lease struct {
	MAC      net.HardwareAddr
	IP       netip.Prefix // address and network
	Router   netip.Addr
	DNS      []netip.Addr
	Domain   string
	Hostname string
	MTU      uint16
	Duration time.Duration
}

// DHCP message types and options (RFC 2131, 2132).
const (
	dhcpDiscover = 1
	dhcpOffer    = 2
	dhcpRequest  = 3
	dhcpAck      = 5
	dhcpNak      = 6

	optSubnetMask  = 1
	optRouter      = 3
	optDNS         = 6
	optHostname    = 12
	optDomainName  = 15
	optMTU         = 26
	optRequestedIP = 50
	optLeaseTime   = 51
	optMessageType = 53
	optServerID    = 54
	optEnd         = 255
)

var dhcpMagic = []byte{99, 130, 83, 99}

type dhcpMessage struct {
	op      byte
	xid     [4]byte
	flags   uint16
	ciaddr  netip.Addr
	chaddr  net.HardwareAddr
	options map[byte][]byte
}

func parseDHCP(b []byte) (dhcpMessage, error) {
	var m dhcpMessage
	if len(b) < 240 || !equalBytes(b[236:240], dhcpMagic) {
		return m, errors.New("not a DHCP message")
	}
	m.op = b[0]
	if b[1] != 1 || b[2] != 6 {
		return m, errors.New("not ethernet")
	}
	copy(m.xid[:], b[4:8])
	m.flags = binary.BigEndian.Uint16(b[10:12])
	m.ciaddr = netip.AddrFrom4([4]byte(b[12:16]))
	m.chaddr = net.HardwareAddr(append([]byte(nil), b[28:34]...))
	m.options = map[byte][]byte{}
	for i := 240; i < len(b); {
		code := b[i]
		if code == optEnd {
			break
		}
		if code == 0 {
			i++
			continue
		}
		if i+1 >= len(b) || i+2+int(b[i+1]) > len(b) {
			return m, errors.New("truncated option")
		}
		m.options[code] = b[i+2 : i+2+int(b[i+1])]
		i += 2 + int(b[i+1])
	}
	return m, nil
}

func equalBytes(a, b []byte) bool { return string(a) == string(b) }

// reply is the server's answer to m, or nil when it has none.
func (l Lease) reply(m dhcpMessage, server netip.Addr) []byte {
	if m.op != 1 || m.chaddr.String() != l.MAC.String() {
		return nil
	}
	typ := byte(0)
	if t := m.options[optMessageType]; len(t) == 1 {
		typ = t[0]
	}
	var answer byte
	switch typ {
	case dhcpDiscover:
		answer = dhcpOffer
	case dhcpRequest:
		answer = dhcpAck
		requested := m.ciaddr
		if r := m.options[optRequestedIP]; len(r) == 4 {
			requested = netip.AddrFrom4([4]byte(r))
		}
		if requested.IsValid() && !requested.IsUnspecified() && requested != l.IP.Addr() {
			answer = dhcpNak
		}
		if id := m.options[optServerID]; len(id) == 4 && netip.AddrFrom4([4]byte(id)) != server {
			return nil // the guest chose another server
		}
	default:
		return nil
	}
	b := make([]byte, 240, 400)
	b[0], b[1], b[2] = 2, 1, 6
	copy(b[4:8], m.xid[:])
	binary.BigEndian.PutUint16(b[10:12], m.flags)
	if answer != dhcpNak {
		ip := l.IP.Addr().As4()
		copy(b[16:20], ip[:])
	}
	sid := server.As4()
	copy(b[20:24], sid[:])
	copy(b[28:34], l.MAC)
	copy(b[236:240], dhcpMagic)
	opt := func(code byte, v []byte) { b = append(append(b, code, byte(len(v))), v...) }
	opt(optMessageType, []byte{answer})
	opt(optServerID, sid[:])
	if answer != dhcpNak {
		mask := net.CIDRMask(l.IP.Bits(), 32)
		opt(optSubnetMask, mask)
		if l.Router.Is4() { // a pod route through the link alone has no next hop to hand over
			r := l.Router.As4()
			opt(optRouter, r[:])
		}
		var dns []byte
		for _, d := range l.DNS {
			if d.Is4() {
				a := d.As4()
				dns = append(dns, a[:]...)
			}
		}
		if len(dns) > 0 {
			opt(optDNS, dns)
		}
		lease := make([]byte, 4)
		binary.BigEndian.PutUint32(lease, uint32(l.Duration/time.Second))
		opt(optLeaseTime, lease)
		if l.Hostname != "" {
			opt(optHostname, []byte(l.Hostname))
		}
		if l.Domain != "" {
			opt(optDomainName, []byte(l.Domain))
		}
		if l.MTU != 0 {
			mtu := make([]byte, 2)
			binary.BigEndian.PutUint16(mtu, l.MTU)
			opt(optMTU, mtu)
		}
	}
	b = append(b, optEnd)
	return b
}

// ServeDHCP answers the guest's DHCP on the bridge link until ctx ends. server is the
// bridge's address.
func ServeDHCP(ctx context.Context, bridge string, server netip.Addr, lease Lease) error {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); serr != nil {
				return
			}
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1); serr != nil {
				return
			}
			// Only the bridge's traffic: the pod interface's network must never see this server.
			serr = unix.BindToDevice(int(fd), bridge)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(ctx, "udp4", "0.0.0.0:67")
	if err != nil {
		return fmt.Errorf("DHCP server on %s: %w", bridge, err)
	}
	go func() {
		<-ctx.Done()
		pc.Close()
	}()
	buf := make([]byte, 1500)
	broadcast := &net.UDPAddr{IP: net.IPv4bcast, Port: 68}
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		m, err := parseDHCP(buf[:n])
		if err != nil {
			continue
		}
		if out := lease.reply(m, server); out != nil {
			if _, err := pc.WriteTo(out, broadcast); err != nil {
				klog.ErrorS(err, "DHCP reply", "bridge", bridge)
			}
		}
	}
}

// ResolvConf reads name servers and the first search domain from a resolv.conf.
func ResolvConf(path string) (servers []netip.Addr, domain string) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if a, err := netip.ParseAddr(fields[1]); err == nil && a.Is4() && !a.IsLoopback() {
				servers = append(servers, a)
			}
		case "search", "domain":
			if domain == "" {
				domain = fields[1]
			}
		}
	}
	return servers, domain
}
