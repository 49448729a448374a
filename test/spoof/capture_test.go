package spoof

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAndForeign(t *testing.T) {
	own, _ := net.ParseMAC("52:54:00:12:34:56")
	other, _ := net.ParseMAC("02:00:00:00:00:77")
	eth := func(src net.HardwareAddr, etherType uint16, payload []byte) []byte {
		b := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, src...)
		return append(append(b, byte(etherType>>8), byte(etherType)), payload...)
	}
	ipv4 := func(src, dst string) []byte {
		h := make([]byte, 20)
		h[0] = 0x45
		s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
		copy(h[12:], s[:])
		copy(h[16:], d[:])
		return h
	}
	arp := func(mac net.HardwareAddr, ip string) []byte {
		h := make([]byte, 28)
		copy(h[8:], mac)
		a := netip.MustParseAddr(ip).As4()
		copy(h[14:], a[:])
		return h
	}
	ipv6 := func(src string) []byte {
		h := make([]byte, 40)
		s := netip.MustParseAddr(src).As16()
		copy(h[8:], s[:])
		return h
	}
	id := Identity{MACs: []net.HardwareAddr{own}, IPs: []netip.Addr{netip.MustParseAddr("10.0.0.2"), LinkLocal(own)}}
	tests := []struct {
		name    string
		frame   []byte
		foreign bool
	}{
		{"own IPv4", eth(own, 0x0800, ipv4("10.0.0.2", "10.0.0.1")), false},
		{"spoofed IPv4", eth(own, 0x0800, ipv4("10.0.0.77", "10.0.0.1")), true},
		{"own ARP", eth(own, 0x0806, arp(own, "10.0.0.2")), false},
		{"ARP for another address", eth(own, 0x0806, arp(own, "10.0.0.78")), true},
		{"ARP naming another MAC", eth(own, 0x0806, arp(other, "10.0.0.2")), true},
		{"own link-local IPv6", eth(own, 0x86dd, ipv6("fe80::5054:ff:fe12:3456")), false},
		{"global IPv6", eth(own, 0x86dd, ipv6("fd00:99::77")), true},
		{"another MAC", eth(other, 0x88b5, nil), true},
	}
	for _, tc := range tests {
		f, ok := Parse(tc.frame)
		require.True(t, ok, tc.name)
		assert.Equal(t, tc.foreign, len(id.Foreign([]Frame{f})) > 0, "%s: %s", tc.name, f)
	}
	_, ok := Parse([]byte{1, 2, 3})
	assert.False(t, ok, "shorter than an Ethernet header")
}
