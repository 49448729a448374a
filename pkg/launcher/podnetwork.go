package launcher

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/podnetwork"
	"github.com/hangarvm/hangar/pkg/podnetwork/dhcp"
)

// PodNetwork is the launcher's side of the bindings (launcher.Network): virt-handler has set
// up the pod side before Sync (the launcher has no privileges); the launcher reads what it
// made, serves DHCP and reports the interfaces.
type PodNetwork struct {
	// ResolvConf is the pod's resolver configuration handed to the guest; /etc/resolv.conf
	// when empty.
	ResolvConf string

	mu     sync.Mutex
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Setup prepares the interfaces of vmi and starts their DHCP servers.
func (m *PodNetwork) Setup(ctx context.Context, vmi *v1.VirtualMachineInstance) (map[string]string, []api.Interface, error) {
	plans, err := podnetwork.Plans(vmi)
	if err != nil {
		return nil, nil, err
	}
	atts, err := podnetwork.InspectPod(nil, plans)
	if err != nil {
		return nil, nil, err
	}
	resolv := m.ResolvConf
	if resolv == "" {
		resolv = "/etc/resolv.conf"
	}
	dns, domain := dhcp.ResolvConf(resolv)

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil {
		return nil, nil, fmt.Errorf("network already set up")
	}
	serveCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	taps := map[string]string{}
	var ifaces []api.Interface
	for _, a := range atts {
		p := a.Plan
		lease := dhcp.Lease{
			MAC: a.MAC, IP: a.Lease, Router: a.Router, DNS: dns, Domain: domain,
			Hostname: p.Hostname, MTU: uint16(a.MTU), Duration: 24 * time.Hour,
		}
		m.done.Add(1)
		go func(p podnetwork.Plan) {
			defer m.done.Done()
			if err := dhcp.Serve(serveCtx, p.Bridge, p.Gateway.Addr(), lease); err != nil {
				klog.ErrorS(err, "DHCP server stopped", "interface", p.Interface)
			}
		}(p)
		taps[p.Interface] = p.Tap
		ifaces = append(ifaces, api.Interface{
			Name: p.Interface, MAC: a.MAC.String(), IP: a.PodIP.String(), GuestIP: a.Lease.Addr().String(),
			PodInterfaceName: a.PodInterface,
		})
	}
	return taps, ifaces, nil
}

// Close stops the DHCP servers.
func (m *PodNetwork) Close() {
	m.mu.Lock()
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
		m.done.Wait()
	}
}
