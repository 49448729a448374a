package launcher

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
)

// The guest agent (qemu-guest-agent in the guest, on the virtio-serial channel every domain
// has): while it is connected the launcher reports its OS and its interfaces in the state
// (the handler writes them into the instance's status), answers the guestosinfo, userlist
// and filesystemlist subresources, and freezes and thaws the guest's file systems. It talks
// to the agent through its libvirtd only.

// Polling: the interfaces are asked for often (addresses change), the rest seldom.
const (
	defaultAgentPoll = 10 * time.Second
	agentInfoEvery   = 6 // polls
	// Bounds on what the launcher keeps of an agent's report; the handler checks again.
	maxAgentInterfaces = api.MaxAgentInterfaces
	maxAgentIPs        = api.MaxAgentIPs
)

// errNoAgent marks a request that needs the guest agent while none is connected.
var errNoAgent = fmt.Errorf("%w: the guest agent is not connected", errConflict)

// agentLoop polls the agent until ctx ends; kick asks for a poll now (an agent event).
func (l *Launcher) agentLoop(ctx context.Context, name string, kick <-chan struct{}) {
	interval := l.cfg.AgentPoll
	if interval <= 0 {
		interval = defaultAgentPoll
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	polls := 0
	for {
		l.pollAgent(name, polls%agentInfoEvery == 0)
		polls++
		select {
		case <-ctx.Done():
			return
		case <-kick:
			polls = 0 // a (re)connected agent: its OS may be another one
		case <-tick.C:
		}
	}
}

// pollAgent refreshes the agent part of the state.
func (l *Launcher) pollAgent(name string, withInfo bool) {
	connected, err := l.agent.AgentConnected(name)
	if err != nil || !connected {
		l.update(func(s *api.State) { s.Agent = nil })
		return
	}
	next := &api.Agent{}
	l.mu.Lock()
	if l.state.Agent != nil {
		*next = *l.state.Agent
	}
	l.mu.Unlock()
	if withInfo || next.OS == (v1.VirtualMachineInstanceGuestOSInfo{}) {
		if info, err := l.agent.GuestInfo(name); err == nil {
			next.OS, next.Hostname = osInfo(info.OS), info.Hostname
		} else {
			klog.V(2).InfoS("guest agent: guest info", "err", err)
		}
	}
	if ifaces, err := l.agent.AgentInterfaces(name); err == nil {
		next.Interfaces = agentInterfaces(ifaces)
	} else {
		klog.V(2).InfoS("guest agent: interfaces", "err", err)
	}
	l.update(func(s *api.State) { s.Agent = next })
}

// agentInterfaces keeps the guest's real interfaces (not loopback), within bounds.
func agentInterfaces(in []virt.AgentInterface) []api.AgentInterface {
	var out []api.AgentInterface
	for _, i := range in {
		if i.Name == "lo" || i.MAC == "" || i.MAC == "00:00:00:00:00:00" {
			continue
		}
		if len(out) == maxAgentInterfaces {
			break
		}
		ips := i.IPs
		if len(ips) > maxAgentIPs {
			ips = ips[:maxAgentIPs]
		}
		out = append(out, api.AgentInterface{Name: i.Name, MAC: i.MAC, IPs: ips})
	}
	return out
}

func osInfo(o virt.OSInfo) v1.VirtualMachineInstanceGuestOSInfo {
	return v1.VirtualMachineInstanceGuestOSInfo{Name: o.Name, KernelRelease: o.KernelRelease, Version: o.Version,
		PrettyName: o.PrettyName, VersionID: o.VersionID, KernelVersion: o.KernelVersion, Machine: o.Machine, ID: o.ID}
}

// update changes the state outside a phase change (the agent's report, a freeze) and wakes
// the long polls when something changed.
func (l *Launcher) update(mutate func(*api.State)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.Phase.Final() {
		return
	}
	next := l.state
	mutate(&next)
	if reflect.DeepEqual(next, l.state) {
		return
	}
	next.Seq++
	l.state = next
	l.events = append(l.events, api.Event{Seq: l.state.Seq, State: l.state})
	if len(l.events) > keptEvents {
		l.events = l.events[len(l.events)-keptEvents:]
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// agentDomain is the domain whose agent a request may use: a running guest with a connected
// agent.
func (l *Launcher) agentDomain() (string, error) {
	l.mu.Lock()
	name, phase, agent := l.state.Domain, l.state.Phase, l.state.Agent
	l.mu.Unlock()
	switch {
	case l.agent == nil:
		return "", errors.New("this launcher has no access to guest agents")
	case phase != api.PhaseRunning:
		return "", fmt.Errorf("%w: the guest is %q, not Running", errConflict, phase)
	}
	if agent == nil {
		// The poll may not have run since the agent connected: ask libvirt.
		if ok, err := l.agent.AgentConnected(name); err != nil || !ok {
			return "", errNoAgent
		}
	}
	return name, nil
}

// GuestInfo is the agent's report, in KubeVirt's terms.
func (l *Launcher) GuestInfo() (v1.VirtualMachineInstanceGuestAgentInfo, error) {
	var out v1.VirtualMachineInstanceGuestAgentInfo
	name, err := l.agentDomain()
	if err != nil {
		return out, err
	}
	info, err := l.agent.GuestInfo(name)
	if err != nil {
		return out, fmt.Errorf("guest agent: %w", err)
	}
	out.GuestAgentVersion, out.Hostname, out.Timezone, out.OS = info.AgentVersion, info.Hostname, info.Timezone, osInfo(info.OS)
	// The guest's lists within the protocol's bounds: the handler refuses an answer past them.
	for _, c := range info.Commands[:min(len(info.Commands), api.MaxAgentCommands)] {
		out.SupportedCommands = append(out.SupportedCommands, v1.GuestAgentCommandInfo{Name: c.Name, Enabled: c.Enabled})
	}
	for _, u := range info.Users[:min(len(info.Users), api.MaxAgentUsers)] {
		out.UserList = append(out.UserList, v1.VirtualMachineInstanceGuestOSUser{UserName: u.Name, Domain: u.Domain, LoginTime: u.LoginTime})
	}
	l.mu.Lock()
	buses, frozen := l.diskBuses, l.state.FSFrozen
	l.mu.Unlock()
	out.FSInfo.Disks = []v1.VirtualMachineInstanceFileSystem{}
	for _, fs := range info.FileSystems[:min(len(info.FileSystems), api.MaxAgentFileSystems)] {
		f := v1.VirtualMachineInstanceFileSystem{DiskName: fs.Name, MountPoint: fs.MountPoint, FileSystemType: fs.Type,
			UsedBytes: int(fs.UsedBytes), TotalBytes: int(fs.TotalBytes)}
		for _, d := range fs.Disks[:min(len(fs.Disks), api.MaxAgentDisksPerFileSystem)] {
			f.Disk = append(f.Disk, v1.VirtualMachineInstanceFileSystemDisk{Serial: d.Serial, BusType: buses[d.Target]})
		}
		out.FSInfo.Disks = append(out.FSInfo.Disks, f)
	}
	if frozen {
		out.FSFreezeStatus = v1.FSFrozen
	}
	return out, nil
}

// Freeze freezes the guest's file systems (for a consistent snapshot) and thaws them after
// unfreezeAfter unless Unfreeze comes first; 0 never thaws them by itself.
func (l *Launcher) Freeze(unfreezeAfter time.Duration) (api.State, error) {
	name, err := l.agentDomain()
	if err != nil {
		return l.State(), err
	}
	if err := l.agent.FSFreeze(name); err != nil {
		return l.State(), fmt.Errorf("freeze: %w", err)
	}
	l.mu.Lock()
	if l.thawTimer != nil {
		l.thawTimer.Stop()
		l.thawTimer = nil
	}
	if unfreezeAfter > 0 {
		l.thawTimer = time.AfterFunc(unfreezeAfter, func() {
			klog.InfoS("unfreeze timeout; thawing the guest's file systems", "after", unfreezeAfter)
			if _, err := l.Unfreeze(); err != nil {
				klog.ErrorS(err, "thaw after the unfreeze timeout")
			}
		})
	}
	l.mu.Unlock()
	l.update(func(s *api.State) { s.FSFrozen = true })
	return l.State(), nil
}

// Unfreeze thaws the guest's file systems; thawing a guest that is not frozen is no error.
func (l *Launcher) Unfreeze() (api.State, error) {
	name, err := l.agentDomain()
	if err != nil {
		return l.State(), err
	}
	if err := l.agent.FSThaw(name); err != nil {
		return l.State(), fmt.Errorf("thaw: %w", err)
	}
	l.mu.Lock()
	if l.thawTimer != nil {
		l.thawTimer.Stop()
		l.thawTimer = nil
	}
	l.mu.Unlock()
	l.update(func(s *api.State) { s.FSFrozen = false })
	return l.State(), nil
}
