// Package dhcp is the DHCPv4 server the launcher runs for its guest: unprivileged, bound to the
// in-pod bridge virt-handler made (pkg/podnetwork/setup), answering only the guest's MAC.
package dhcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
	"github.com/insomniacslk/dhcp/iana"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// A DHCPv4 server for exactly one client: the guest behind a bridge in the pod. It answers
// DISCOVER with an OFFER and REQUEST with an ACK (or a NAK for another address), for the
// guest's MAC only. Messages are parsed and built by github.com/insomniacslk/dhcp; its
// server4 reads the socket.

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

// reply is the server's answer to req, or nil when it has none: req is whatever the guest
// sent, so everything in it is checked before it counts.
func (l Lease) reply(req *dhcpv4.DHCPv4, server netip.Addr) *dhcpv4.DHCPv4 {
	if req.OpCode != dhcpv4.OpcodeBootRequest || req.HWType != iana.HWTypeEthernet || !bytes.Equal(req.ClientHWAddr, l.MAC) {
		return nil
	}
	var answer dhcpv4.MessageType
	switch req.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		answer = dhcpv4.MessageTypeOffer
	case dhcpv4.MessageTypeRequest:
		if id := req.ServerIdentifier(); id != nil && !id.Equal(net.IP(server.AsSlice())) {
			return nil // the guest chose another server
		}
		answer = dhcpv4.MessageTypeAck
		requested := req.ClientIPAddr
		if r := req.RequestedIPAddress(); r != nil {
			requested = r
		}
		if a, ok := netip.AddrFromSlice(requested.To4()); ok && !a.IsUnspecified() && a != l.IP.Addr() {
			answer = dhcpv4.MessageTypeNak
		}
	default:
		return nil
	}
	sid := net.IP(server.AsSlice())
	mods := []dhcpv4.Modifier{
		dhcpv4.WithMessageType(answer),
		dhcpv4.WithServerIP(sid),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(sid)),
	}
	if answer != dhcpv4.MessageTypeNak {
		mods = append(mods,
			dhcpv4.WithYourIP(net.IP(l.IP.Addr().AsSlice())),
			dhcpv4.WithNetmask(net.CIDRMask(l.IP.Bits(), 32)),
			dhcpv4.WithLeaseTime(uint32(l.Duration/time.Second)),
		)
		if l.Router.Is4() { // a pod route through the link alone has no next hop to hand over
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptRouter(net.IP(l.Router.AsSlice()))))
		}
		var dns []net.IP
		for _, d := range l.DNS {
			if d.Is4() {
				dns = append(dns, net.IP(d.AsSlice()))
			}
		}
		if len(dns) > 0 {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptDNS(dns...)))
		}
		if l.Hostname != "" {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptHostName(l.Hostname)))
		}
		if l.Domain != "" {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptDomainName(l.Domain)))
		}
		if l.MTU != 0 {
			mods = append(mods, dhcpv4.WithGeneric(dhcpv4.OptionInterfaceMTU, binary.BigEndian.AppendUint16(nil, l.MTU)))
		}
	}
	resp, err := dhcpv4.NewReplyFromRequest(req, mods...)
	if err != nil {
		klog.ErrorS(err, "DHCP reply")
		return nil
	}
	return resp
}

// maxAnswering bounds the replies being built at once: server4 hands every message to
// the handler on a goroutine of its own, and a guest may send as fast as it likes. Past
// the bound a message is dropped; a DHCP client sends again.
const maxAnswering = 4

// handler answers on conn; the answer is broadcast on the bridge, as the guest may not
// have its address yet (and in the bridge binding the pod's namespace has no route to it).
func (l Lease) handler(server netip.Addr) server4.Handler {
	busy := make(chan struct{}, maxAnswering)
	broadcast := &net.UDPAddr{IP: net.IPv4bcast, Port: dhcpv4.ClientPort}
	return func(conn net.PacketConn, _ net.Addr, req *dhcpv4.DHCPv4) {
		select {
		case busy <- struct{}{}:
			defer func() { <-busy }()
		default:
			return
		}
		if resp := l.reply(req, server); resp != nil {
			if _, err := conn.WriteTo(resp.ToBytes(), broadcast); err != nil {
				klog.ErrorS(err, "DHCP reply")
			}
		}
	}
}

// Serve answers the guest's DHCP on the bridge link until ctx ends. server is the
// bridge's address. It needs no privilege: virt-handler made port 67 unprivileged in the
// pod's namespace, and binding a socket to a device is allowed to anyone.
func Serve(ctx context.Context, bridge string, server netip.Addr, lease Lease) error {
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
	pc, err := lc.ListenPacket(ctx, "udp4", fmt.Sprintf("0.0.0.0:%d", dhcpv4.ServerPort))
	if err != nil {
		return fmt.Errorf("DHCP server on %s: %w", bridge, err)
	}
	srv, err := server4.NewServer(bridge, nil, lease.handler(server), server4.WithConn(pc))
	if err != nil {
		pc.Close()
		return fmt.Errorf("DHCP server on %s: %w", bridge, err)
	}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("DHCP server on %s: %w", bridge, err)
	}
	return nil
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
