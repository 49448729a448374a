package podnetwork

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/hangarvm/hangar/pkg/podnetwork/internal/nlutil"
)

// Attachment is what one plan's interface gets in the pod: what the launcher serves by DHCP
// and reports.
type Attachment struct {
	Plan Plan
	// PodInterface is the pod interface the guest's traffic leaves through.
	PodInterface string
	// PodIP is the address the instance is reached at.
	PodIP netip.Addr
	// MAC is the guest's MAC.
	MAC net.HardwareAddr
	// Lease is the guest's address, gateway and MTU (0: the guest's default).
	Lease  netip.Prefix
	Router netip.Addr
	MTU    int
}

// NewAttachment is a's values for plan p once the pod side is known.
func NewAttachment(p Plan, pod Pod, bridged *BridgedPod) (Attachment, error) {
	a := Attachment{Plan: p, PodInterface: pod.Interface, PodIP: pod.IP, Lease: p.Guest, Router: p.Gateway.Addr()}
	var podMAC net.HardwareAddr
	if bridged != nil {
		a.PodInterface, a.PodIP, a.Lease, a.Router, a.MTU = bridged.Interface, bridged.IP.Addr(), bridged.IP, bridged.Gateway, bridged.MTU
		podMAC = bridged.MAC
	}
	mac, err := GuestMAC(p, podMAC)
	if err != nil {
		return a, fmt.Errorf("interface %s: %w", p.Interface, err)
	}
	a.MAC = mac
	return a, nil
}

// GuestMAC is the guest's MAC for plan p: the spec's, else podMAC (for a bridge binding the
// pod interface's original MAC, which the guest takes over).
func GuestMAC(p Plan, podMAC net.HardwareAddr) (net.HardwareAddr, error) {
	if p.MAC == "" {
		return podMAC, nil
	}
	return net.ParseMAC(p.MAC)
}

// InspectPod reads, without changing anything, what setup.Pod made of plans in netns (nil for
// the caller's): the launcher's view when virt-handler did the setup.
func InspectPod(netns *os.File, plans []Plan) ([]Attachment, error) {
	h, err := nlutil.OpenHandle(netns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	var pod Pod
	var atts []Attachment
	for _, p := range plans {
		var bridged *BridgedPod
		switch p.Binding {
		case BindingBridge:
			b, ok, err := ReadBridgedPod(h, p)
			if err != nil {
				return nil, fmt.Errorf("interface %s: %w", p.Interface, err)
			}
			if !ok {
				return nil, fmt.Errorf("interface %s: bridge %s is not set up", p.Interface, p.Bridge)
			}
			bridged = &b
		default:
			if !pod.IP.IsValid() {
				if pod, err = ReadPod(h); err != nil {
					return nil, err
				}
			}
		}
		a, err := NewAttachment(p, pod, bridged)
		if err != nil {
			return nil, err
		}
		atts = append(atts, a)
	}
	return atts, nil
}
