package launcher

import (
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

// Stats reads the running guest's statistics from libvirt (without waiting on a busy QEMU
// monitor) under the instance's device names.
func (l *Launcher) Stats() (api.Stats, error) {
	l.mu.Lock()
	name, phase, names := l.state.Domain, l.state.Phase, l.devices
	l.mu.Unlock()
	switch phase {
	case api.PhaseRunning, api.PhasePaused, api.PhaseShuttingDown:
	default:
		return api.Stats{}, fmt.Errorf("%w: the guest is %q", errConflict, phase)
	}
	ds, err := l.hv.Stats(name)
	if err != nil {
		return api.Stats{}, fmt.Errorf("statistics of %s: %w", name, err)
	}
	return statsOf(l.cfg.UID, ds, names), nil
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
