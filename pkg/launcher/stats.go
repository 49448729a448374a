package launcher

import (
	"context"
	"fmt"

	"libvirt.org/go/libvirtxml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
)

// deviceNames maps libvirt's device names back to the instance's: taps to interface names,
// target devices (vda, sdb) to disk names. Statistics leave the launcher under the names the
// instance's spec gives, the only ones the handler accepts.
type deviceNames struct {
	interfaces map[string]string
	disks      map[string]string
}

// namesOf reads the mapping from the domain Convert built: one libvirt disk per spec disk, in
// spec order; taps from the network setup.
func namesOf(vmi *v1.VirtualMachineInstance, dom *libvirtxml.Domain, taps map[string]string) deviceNames {
	n := deviceNames{interfaces: map[string]string{}, disks: map[string]string{}}
	for iface, tap := range taps {
		n.interfaces[tap] = iface
	}
	if dom.Devices != nil {
		specDisks := vmi.Spec.Domain.Devices.Disks
		for i, d := range dom.Devices.Disks {
			if i < len(specDisks) && d.Target != nil {
				n.disks[d.Target.Dev] = specDisks[i].Name
			}
		}
	}
	return n
}

// statsCall is a libvirt statistics call under way. Requests that arrive meanwhile share it:
// a QEMU monitor that answers slowly (libvirt's first call after a boot takes seconds under
// TCG) gets one question at a time, however often the handler asks or gives up.
type statsCall struct {
	done  chan struct{}
	stats api.Stats
	err   error
}

// Stats reads the running guest's statistics from libvirt (without waiting on a QEMU monitor
// busy with a job) under the instance's device names. ctx bounds the wait, not the call: a
// call that outlives it serves the next request.
func (l *Launcher) Stats(ctx context.Context) (api.Stats, error) {
	l.mu.Lock()
	name, phase, names := l.state.Domain, l.state.Phase, l.devices
	if !phase.GuestRuns() {
		l.mu.Unlock()
		return api.Stats{}, fmt.Errorf("%w: the guest is %q", errConflict, phase)
	}
	call := l.stats
	if call == nil {
		call = &statsCall{done: make(chan struct{})}
		l.stats = call
		go func() {
			ds, err := l.hv.Stats(name)
			if err != nil {
				call.err = fmt.Errorf("statistics of %s: %w", name, err)
			} else {
				call.stats = statsOf(l.cfg.UID, ds, names)
			}
			l.mu.Lock()
			l.stats = nil
			l.mu.Unlock()
			close(call.done)
		}()
	}
	l.mu.Unlock()
	select {
	case <-call.done:
		return call.stats, call.err
	case <-ctx.Done():
		return api.Stats{}, ctx.Err()
	}
}

func statsOf(uid string, ds virt.DomainStats, names deviceNames) api.Stats {
	s := api.Stats{UID: uid, CPUTimeNanoseconds: ds.CPUTime}
	for _, v := range ds.VCPUs {
		s.VCPUs = append(s.VCPUs, api.VCPUStats{ID: v.ID, State: v.State, TimeNanoseconds: v.Time})
	}
	s.Memory.ResidentBytes = kib(ds.RSSKiB)
	s.Memory.AvailableBytes = kib(ds.AvailableKiB)
	s.Memory.DomainBytes = kib(ds.CurrentKiB)
	if s.Memory.DomainBytes == nil {
		s.Memory.DomainBytes = kib(ds.MaximumKiB)
	}
	for _, n := range ds.Net {
		iface, ok := names.interfaces[n.Name]
		if !ok {
			continue
		}
		s.Interfaces = append(s.Interfaces, api.InterfaceStats{
			Name: iface, RxBytes: n.RxBytes, RxPackets: n.RxPackets, RxErrors: n.RxErrors, RxDropped: n.RxDropped,
			TxBytes: n.TxBytes, TxPackets: n.TxPackets, TxErrors: n.TxErrors, TxDropped: n.TxDropped,
		})
	}
	for _, b := range ds.Block {
		disk, ok := names.disks[b.Name]
		if !ok {
			continue
		}
		s.Disks = append(s.Disks, api.DiskStats{
			Name: disk, ReadBytes: b.ReadBytes, ReadRequests: b.ReadRequests, ReadTimeNanoseconds: b.ReadTime,
			WriteBytes: b.WriteBytes, WriteRequests: b.WriteRequests, WriteTimeNanoseconds: b.WriteTime,
			FlushRequests: b.FlushRequests,
		})
	}
	return s
}

func kib(v *uint64) *uint64 {
	if v == nil {
		return nil
	}
	b := *v * 1024
	return &b
}
