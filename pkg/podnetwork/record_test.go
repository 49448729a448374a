package podnetwork

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testBridgedPod() BridgedPod {
	mac, _ := net.ParseMAC("0a:58:0a:d9:00:05")
	return BridgedPod{Interface: "eth0", IP: netip.MustParsePrefix("10.217.0.5/24"),
		Gateway: netip.MustParseAddr("10.217.0.1"), MAC: mac, MTU: 1450}
}

func TestBridgedPodRecord(t *testing.T) {
	pod := testBridgedPod()
	noGateway := pod
	noGateway.Gateway = netip.Addr{}
	tests := []struct {
		name   string
		alias  string
		want   BridgedPod
		ok     bool
		errMsg string
	}{
		{name: "round trip", alias: pod.String(), want: pod, ok: true},
		{name: "no gateway", alias: noGateway.String(), want: noGateway, ok: true},
		{name: "no alias: not set up yet", alias: ""},
		{name: "someone else's alias", alias: "uplink to the rack"},
		{name: "a field missing", alias: "hangar-bridge/v1 if=eth0 ip=10.217.0.5/24 gw=10.217.0.1 mtu=1450", errMsg: "no mac"},
		{name: "a broken address", alias: "hangar-bridge/v1 if=eth0 ip=10.217.0.5 gw=none mac=0a:58:0a:d9:00:05 mtu=1450", errMsg: "ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := parseBridgedPod(tt.alias)
			if tt.errMsg != "" {
				assert.ErrorContains(t, err, tt.errMsg)
				assert.False(t, ok)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.ok, ok)
			if tt.ok {
				assert.Equal(t, tt.want, got)
			}
		})
	}
	assert.Less(t, len(pod.String()), 256, "fits IFALIASZ")
	assert.Equal(t, "hangar-bridge/v1 if=eth0 ip=10.217.0.5/24 gw=10.217.0.1 mac=0a:58:0a:d9:00:05 mtu=1450", pod.String())
}

func TestAttachment(t *testing.T) {
	bridgePlan := Plan{Interface: "default", Binding: BindingBridge, Bridge: "hangar-br0", Tap: "hangar-tap0",
		Gateway: netip.MustParsePrefix("169.254.75.10/32"), Hostname: "guest"}
	withMAC := bridgePlan
	withMAC.MAC = "de:ad:00:00:be:ef"
	masq := Plan{Interface: "default", Binding: BindingMasquerade, Bridge: "hangar-br0", Tap: "hangar-tap0", MAC: "52:54:00:01:02:03",
		Gateway: netip.MustParsePrefix("10.0.2.1/24"), Guest: netip.MustParsePrefix("10.0.2.2/24")}
	bridged := testBridgedPod()
	pod := Pod{Interface: "eth0", IP: netip.MustParseAddr("10.217.0.5"), Prefix: netip.MustParsePrefix("10.217.0.5/24"),
		Gateway: netip.MustParseAddr("10.217.0.1")}
	tests := []struct {
		name    string
		plan    Plan
		bridged *BridgedPod
		want    Attachment
	}{
		{
			name: "bridge: the guest gets the pod's address, gateway, MTU and MAC", plan: bridgePlan, bridged: &bridged,
			want: Attachment{Plan: bridgePlan, PodInterface: "eth0", PodIP: netip.MustParseAddr("10.217.0.5"), MAC: bridged.MAC,
				Lease: netip.MustParsePrefix("10.217.0.5/24"), Router: netip.MustParseAddr("10.217.0.1"), MTU: 1450},
		},
		{
			name: "bridge with the spec's MAC", plan: withMAC, bridged: &bridged,
			want: Attachment{Plan: withMAC, PodInterface: "eth0", PodIP: netip.MustParseAddr("10.217.0.5"), MAC: net.HardwareAddr{0xde, 0xad, 0, 0, 0xbe, 0xef},
				Lease: netip.MustParsePrefix("10.217.0.5/24"), Router: netip.MustParseAddr("10.217.0.1"), MTU: 1450},
		},
		{
			name: "masquerade: the guest's private address behind the pod's", plan: masq,
			want: Attachment{Plan: masq, PodInterface: "eth0", PodIP: netip.MustParseAddr("10.217.0.5"), MAC: net.HardwareAddr{0x52, 0x54, 0, 1, 2, 3},
				Lease: netip.MustParsePrefix("10.0.2.2/24"), Router: netip.MustParseAddr("10.0.2.1")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewAttachment(tt.plan, pod, tt.bridged)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
