package network

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// Masquerade is the launcher's side of the masquerade binding (launcher.Network).
type Masquerade struct {
	// SetupPod makes the launcher set up the pod side itself (it needs CAP_NET_ADMIN);
	// otherwise virt-handler has done it before Sync.
	SetupPod bool
	// ResolvConf is the pod's resolver configuration handed to the guest; /etc/resolv.conf
	// when empty.
	ResolvConf string

	mu     sync.Mutex
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Setup prepares the interfaces of vmi and starts their DHCP servers.
func (m *Masquerade) Setup(ctx context.Context, vmi *v1.VirtualMachineInstance) (map[string]string, []api.Interface, error) {
	plans, err := Plans(vmi)
	if err != nil {
		return nil, nil, err
	}
	var pod Pod
	if m.SetupPod {
		pod, err = SetupPod(ctx, "", plans)
	} else {
		pod, err = LookupPod(ctx, "")
	}
	if err != nil {
		return nil, nil, err
	}
	resolv := m.ResolvConf
	if resolv == "" {
		resolv = "/etc/resolv.conf"
	}
	dns, domain := ResolvConf(resolv)

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil {
		return nil, nil, fmt.Errorf("network already set up")
	}
	serveCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	taps := map[string]string{}
	var ifaces []api.Interface
	for _, p := range plans {
		mac, err := net.ParseMAC(p.MAC)
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("interface %s: %w", p.Interface, err)
		}
		lease := Lease{
			MAC: mac, IP: p.Guest, Router: p.Gateway.Addr(), DNS: dns, Domain: domain,
			Hostname: p.Hostname, Duration: 24 * time.Hour,
		}
		m.done.Add(1)
		go func(p Plan) {
			defer m.done.Done()
			if err := ServeDHCP(serveCtx, p.Bridge, p.Gateway.Addr(), lease); err != nil {
				klog.ErrorS(err, "DHCP server stopped", "interface", p.Interface)
			}
		}(p)
		taps[p.Interface] = p.Tap
		ifaces = append(ifaces, api.Interface{
			Name: p.Interface, MAC: p.MAC, IP: pod.IP.String(), GuestIP: p.Guest.Addr().String(),
			PodInterfaceName: pod.Interface,
		})
	}
	return taps, ifaces, nil
}

// Close stops the DHCP servers.
func (m *Masquerade) Close() {
	m.mu.Lock()
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
		m.done.Wait()
	}
}
