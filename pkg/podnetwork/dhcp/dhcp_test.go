package dhcp

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientMessage is a client message of type typ from mac, asking for requested (if valid),
// as bytes on the wire (written by hand, as a guest's client would send them).
func clientMessage(typ dhcpv4.MessageType, mac net.HardwareAddr, requested netip.Addr) []byte {
	b := make([]byte, 240)
	b[0], b[1], b[2] = 1, 1, 6
	copy(b[4:8], []byte{1, 2, 3, 4})
	binary.BigEndian.PutUint16(b[10:], 0x8000)
	copy(b[28:], mac)
	copy(b[236:], []byte{99, 130, 83, 99})
	b = append(b, 53, 1, byte(typ))
	if requested.IsValid() {
		a := requested.As4()
		b = append(append(b, 50, 4), a[:]...)
	}
	return append(b, 255)
}

func testLease() Lease {
	mac, _ := net.ParseMAC("52:54:00:aa:bb:cc")
	return Lease{
		MAC: mac, IP: netip.MustParsePrefix("10.0.2.2/24"), Router: netip.MustParseAddr("10.0.2.1"),
		DNS: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, Domain: "ns.svc.cluster.local",
		Hostname: "guest", MTU: 1450, Duration: time.Hour,
	}
}

var testServer = netip.MustParseAddr("10.0.2.1")

func TestDHCPReplies(t *testing.T) {
	lease := testLease()
	mac := lease.MAC
	// answer is the server's reply to wire as the guest receives it: built, sent, parsed.
	answer := func(l Lease, wire []byte) *dhcpv4.DHCPv4 {
		req, err := dhcpv4.FromBytes(wire)
		require.NoError(t, err)
		resp := l.reply(req, testServer)
		if resp == nil {
			return nil
		}
		m, err := dhcpv4.FromBytes(resp.ToBytes())
		require.NoError(t, err)
		return m
	}
	ip := func(s string) net.IP { return net.ParseIP(s).To4() }

	offer := answer(lease, clientMessage(dhcpv4.MessageTypeDiscover, mac, netip.Addr{}))
	require.NotNil(t, offer)
	assert.Equal(t, dhcpv4.OpcodeBootReply, offer.OpCode)
	assert.Equal(t, dhcpv4.TransactionID{1, 2, 3, 4}, offer.TransactionID)
	assert.True(t, offer.IsBroadcast(), "the client's broadcast flag is kept")
	assert.Equal(t, dhcpv4.MessageTypeOffer, offer.MessageType())
	assert.Equal(t, mac, offer.ClientHWAddr)
	assert.Equal(t, ip("10.0.2.2"), offer.YourIPAddr.To4(), "yiaddr")
	assert.Equal(t, ip("10.0.2.1"), offer.ServerIPAddr.To4(), "siaddr")
	assert.Equal(t, net.IPMask{255, 255, 255, 0}, offer.SubnetMask())
	assert.Equal(t, []net.IP{ip("10.0.2.1")}, offer.Router())
	assert.Equal(t, ip("10.0.2.1"), offer.ServerIdentifier().To4())
	assert.Equal(t, []net.IP{ip("10.96.0.10")}, offer.DNS())
	assert.Equal(t, "guest", offer.HostName())
	assert.Equal(t, "ns.svc.cluster.local", offer.DomainName())
	assert.Equal(t, []byte{0x05, 0xaa}, offer.Options.Get(dhcpv4.OptionInterfaceMTU))
	assert.Equal(t, time.Hour, offer.IPAddressLeaseTime(0))

	ack := answer(lease, clientMessage(dhcpv4.MessageTypeRequest, mac, netip.MustParseAddr("10.0.2.2")))
	require.NotNil(t, ack)
	assert.Equal(t, dhcpv4.MessageTypeAck, ack.MessageType())
	assert.Equal(t, ip("10.0.2.2"), ack.YourIPAddr.To4())
	nak := answer(lease, clientMessage(dhcpv4.MessageTypeRequest, mac, netip.MustParseAddr("10.0.2.9")))
	require.NotNil(t, nak)
	assert.Equal(t, dhcpv4.MessageTypeNak, nak.MessageType())
	assert.Nil(t, nak.Router())
	assert.True(t, nak.YourIPAddr.IsUnspecified(), "a NAK offers nothing")

	// A pod route through the link alone has no next hop: no router option then.
	direct := lease
	direct.Router = netip.Addr{}
	noRouter := answer(direct, clientMessage(dhcpv4.MessageTypeDiscover, mac, netip.Addr{}))
	require.NotNil(t, noRouter)
	assert.Equal(t, dhcpv4.MessageTypeOffer, noRouter.MessageType())
	assert.Nil(t, noRouter.Router())

	other, _ := net.ParseMAC("52:54:00:00:00:01")
	assert.Nil(t, answer(lease, clientMessage(dhcpv4.MessageTypeDiscover, other, netip.Addr{})), "only the guest's MAC")
	assert.Nil(t, answer(lease, clientMessage(dhcpv4.MessageTypeRelease, mac, netip.Addr{})), "nothing but DISCOVER and REQUEST")

	toOther, err := dhcpv4.FromBytes(clientMessage(dhcpv4.MessageTypeRequest, mac, netip.MustParseAddr("10.0.2.2")))
	require.NoError(t, err)
	toOther.UpdateOption(dhcpv4.OptServerIdentifier(ip("10.0.2.77")))
	assert.Nil(t, lease.reply(toOther, testServer), "a REQUEST for another server's offer")

	_, err = dhcpv4.FromBytes([]byte("short"))
	assert.Error(t, err)
}

// FuzzDHCP sends the DHCP server whatever a guest could: whatever parses is answered only
// for the guest's MAC, only with its lease, and the answer parses back; nothing panics.
func FuzzDHCP(f *testing.F) {
	lease := testLease()
	other, _ := net.ParseMAC("52:54:00:00:00:01")
	for _, seed := range [][]byte{
		clientMessage(dhcpv4.MessageTypeDiscover, lease.MAC, netip.Addr{}),
		clientMessage(dhcpv4.MessageTypeRequest, lease.MAC, netip.MustParseAddr("10.0.2.2")),
		clientMessage(dhcpv4.MessageTypeRequest, lease.MAC, netip.MustParseAddr("10.0.2.9")),
		clientMessage(dhcpv4.MessageTypeDiscover, other, netip.Addr{}),
		clientMessage(dhcpv4.MessageTypeInform, lease.MAC, netip.Addr{}),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		req, err := dhcpv4.FromBytes(wire)
		if err != nil {
			return
		}
		resp := lease.reply(req, testServer)
		if resp == nil {
			return
		}
		got, err := dhcpv4.FromBytes(resp.ToBytes())
		require.NoError(t, err, "the answer parses")
		assert.Equal(t, lease.MAC, got.ClientHWAddr, "answers only the guest")
		assert.Equal(t, req.TransactionID, got.TransactionID)
		switch got.MessageType() {
		case dhcpv4.MessageTypeOffer, dhcpv4.MessageTypeAck:
			assert.Equal(t, lease.IP.Addr().AsSlice(), []byte(got.YourIPAddr.To4()), "only the lease")
			assert.Equal(t, net.IPMask{255, 255, 255, 0}, got.SubnetMask())
		case dhcpv4.MessageTypeNak:
			assert.True(t, got.YourIPAddr.IsUnspecified())
		default:
			t.Fatalf("answered with %s", got.MessageType())
		}
		assert.Equal(t, testServer.AsSlice(), []byte(got.ServerIdentifier().To4()))
	})
}

func TestResolvConf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(p, []byte("search ns.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\nnameserver 127.0.0.53\nnameserver ::1\noptions ndots:5\n"), 0o644))
	servers, domain := ResolvConf(p)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.96.0.10")}, servers)
	assert.Equal(t, "ns.svc.cluster.local", domain)
}
