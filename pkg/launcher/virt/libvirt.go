package virt

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"k8s.io/utils/ptr"
	"libvirt.org/go/libvirt"
)

var registerEventLoop sync.Once

// Conn is a Hypervisor backed by a libvirt connection.
type Conn struct {
	conn     *libvirt.Connect
	events   chan Event
	closed   chan struct{}
	closeMu  sync.Once
	callback int
	agentCB  int
}

// Connect opens uri and subscribes to lifecycle events.
func Connect(uri string) (*Conn, error) {
	var loopErr error
	registerEventLoop.Do(func() {
		// libvirt delivers events from its default event loop, which someone must run; it
		// must be registered before the first connection opens.
		if loopErr = libvirt.EventRegisterDefaultImpl(); loopErr != nil {
			return
		}
		go func() {
			for {
				if err := libvirt.EventRunDefaultImpl(); err != nil {
					return
				}
			}
		}()
	})
	if loopErr != nil {
		return nil, fmt.Errorf("libvirt event loop: %w", loopErr)
	}
	conn, err := libvirt.NewConnect(uri)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", uri, err)
	}
	c := &Conn{conn: conn, events: make(chan Event, 256), closed: make(chan struct{})}
	// Keepalive makes a hung or dead libvirtd close the connection within 15 s.
	if err := conn.SetKeepAlive(5, 3); err != nil {
		conn.Close()
		return nil, fmt.Errorf("keepalive: %w", err)
	}
	if err := conn.RegisterCloseCallback(func(*libvirt.Connect, libvirt.ConnectCloseReason) { c.markClosed() }); err != nil {
		conn.Close()
		return nil, fmt.Errorf("close callback: %w", err)
	}
	id, err := conn.DomainEventLifecycleRegister(nil, c.onLifecycle)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("register lifecycle events: %w", err)
	}
	c.callback = id
	agentID, err := conn.DomainEventAgentLifecycleRegister(nil, c.onAgentLifecycle)
	if err != nil {
		_ = conn.DomainEventDeregister(id)
		conn.Close()
		return nil, fmt.Errorf("register guest agent events: %w", err)
	}
	c.agentCB = agentID
	return c, nil
}

func (c *Conn) onAgentLifecycle(_ *libvirt.Connect, d *libvirt.Domain, e *libvirt.DomainEventAgentLifecycle) {
	name, err := d.GetName()
	if err != nil {
		return
	}
	ev := Event{Domain: name, Kind: EventAgent, Detail: "Disconnected"}
	if e.State == libvirt.CONNECT_DOMAIN_EVENT_AGENT_LIFECYCLE_STATE_CONNECTED {
		ev.Detail = "Connected"
	}
	select {
	case c.events <- ev:
	default:
	}
}

func (c *Conn) markClosed() { c.closeMu.Do(func() { close(c.closed) }) }

func (c *Conn) onLifecycle(_ *libvirt.Connect, d *libvirt.Domain, e *libvirt.DomainEventLifecycle) {
	name, err := d.GetName()
	if err != nil {
		return
	}
	ev := Event{Domain: name, Kind: EventOther}
	switch e.Event {
	case libvirt.DOMAIN_EVENT_STARTED:
		ev.Kind = EventStarted
	case libvirt.DOMAIN_EVENT_SUSPENDED:
		ev.Kind = EventSuspended
	case libvirt.DOMAIN_EVENT_RESUMED:
		ev.Kind = EventResumed
	case libvirt.DOMAIN_EVENT_SHUTDOWN:
		ev.Kind = EventShutdown
	case libvirt.DOMAIN_EVENT_CRASHED:
		ev.Kind = EventCrashed
	case libvirt.DOMAIN_EVENT_STOPPED:
		ev.Kind = EventStopped
		ev.Detail = stoppedDetail(libvirt.DomainEventStoppedDetailType(e.Detail))
	}
	select {
	case c.events <- ev:
	default:
		// Never block libvirt's event loop; the launcher re-reads the state on every event,
		// so a dropped one costs nothing once the next arrives.
	}
}

func stoppedDetail(d libvirt.DomainEventStoppedDetailType) string {
	switch d {
	case libvirt.DOMAIN_EVENT_STOPPED_SHUTDOWN:
		return "Shutdown"
	case libvirt.DOMAIN_EVENT_STOPPED_DESTROYED:
		return "Destroyed"
	case libvirt.DOMAIN_EVENT_STOPPED_CRASHED:
		return "Crashed"
	case libvirt.DOMAIN_EVENT_STOPPED_FAILED:
		return "Failed"
	case libvirt.DOMAIN_EVENT_STOPPED_MIGRATED:
		return "Migrated"
	case libvirt.DOMAIN_EVENT_STOPPED_SAVED:
		return "Saved"
	}
	return fmt.Sprintf("Detail%d", d)
}

func shutoffReason(r libvirt.DomainShutoffReason) string {
	switch r {
	case libvirt.DOMAIN_SHUTOFF_SHUTDOWN:
		return "Shutdown"
	case libvirt.DOMAIN_SHUTOFF_DESTROYED:
		return "Destroyed"
	case libvirt.DOMAIN_SHUTOFF_CRASHED:
		return "Crashed"
	case libvirt.DOMAIN_SHUTOFF_FAILED:
		return "Failed"
	case libvirt.DOMAIN_SHUTOFF_MIGRATED:
		return "Migrated"
	}
	return fmt.Sprintf("Reason%d", r)
}

func pausedReason(r libvirt.DomainPausedReason) string {
	switch r {
	case libvirt.DOMAIN_PAUSED_USER:
		return "User"
	case libvirt.DOMAIN_PAUSED_MIGRATION:
		return "Migration"
	case libvirt.DOMAIN_PAUSED_POSTCOPY:
		return "PostCopy"
	case libvirt.DOMAIN_PAUSED_POSTCOPY_FAILED:
		return "PostCopyFailed"
	case libvirt.DOMAIN_PAUSED_STARTING_UP:
		return "StartingUp"
	}
	return fmt.Sprintf("Reason%d", r)
}

func (c *Conn) Events() <-chan Event    { return c.events }
func (c *Conn) Closed() <-chan struct{} { return c.closed }

func (c *Conn) Close() error {
	_ = c.conn.DomainEventDeregister(c.callback)
	_ = c.conn.DomainEventDeregister(c.agentCB)
	_, err := c.conn.Close()
	c.markClosed()
	return err
}

// ProbeQEMU makes libvirtd probe emulator (if its cache does not hold it yet) by asking for
// the domain capabilities of a q35 guest under TCG, which every host can run.
func (c *Conn) ProbeQEMU(emulator string) error {
	_, err := c.conn.GetDomainCapabilities(emulator, "x86_64", "q35", "qemu", 0)
	return err
}

func (c *Conn) Define(xml string) error {
	d, err := c.conn.DomainDefineXML(xml)
	if err != nil {
		return err
	}
	return d.Free()
}

func (c *Conn) withDomain(name string, f func(*libvirt.Domain) error) error {
	d, err := c.conn.LookupDomainByName(name)
	if err != nil {
		return wrapNoDomain(err)
	}
	defer d.Free()
	return wrapNoDomain(f(d))
}

func wrapNoDomain(err error) error {
	var lerr libvirt.Error
	if errors.As(err, &lerr) && lerr.Code == libvirt.ERR_NO_DOMAIN {
		return fmt.Errorf("%w: %v", ErrNoDomain, err)
	}
	return err
}

func (c *Conn) StartPaused(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.CreateWithFlags(libvirt.DOMAIN_START_PAUSED) })
}

func (c *Conn) Resume(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.Resume() })
}

func (c *Conn) Suspend(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.Suspend() })
}

func (c *Conn) Reboot(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.Reboot(libvirt.DOMAIN_REBOOT_ACPI_POWER_BTN) })
}

func (c *Conn) Reset(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.Reset(0) })
}

// AttachDevice changes only the running guest: a hotplugged device is not part of the
// domain's definition, which a launcher never starts again.
func (c *Conn) AttachDevice(name, xml string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error {
		return d.AttachDeviceFlags(xml, libvirt.DOMAIN_DEVICE_MODIFY_LIVE)
	})
}

func (c *Conn) DetachDevice(name, xml string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error {
		return d.DetachDeviceFlags(xml, libvirt.DOMAIN_DEVICE_MODIFY_LIVE)
	})
}

func (c *Conn) AddFDSet(name string, id int, files []*os.File) error {
	cmd := fmt.Sprintf(`{"execute":"add-fd","arguments":{"fdset-id":%d}}`, id)
	return c.withDomain(name, func(d *libvirt.Domain) error {
		for _, f := range files {
			// add-fd takes one descriptor a call.
			if _, _, err := d.QemuMonitorCommandWithFiles(cmd, []os.File{*f}, libvirt.DOMAIN_QEMU_MONITOR_COMMAND_DEFAULT); err != nil {
				return fmt.Errorf("add a descriptor to fd set %d: %w", id, err)
			}
		}
		return nil
	})
}

func (c *Conn) RemoveFDSet(name string, id int) error {
	return c.withDomain(name, func(d *libvirt.Domain) error {
		cmd := fmt.Sprintf(`{"execute":"remove-fd","arguments":{"fdset-id":%d}}`, id)
		_, err := d.QemuMonitorCommand(cmd, libvirt.DOMAIN_QEMU_MONITOR_COMMAND_DEFAULT)
		return err
	})
}

// MemoryDump is KubeVirt's: memory only, in the raw format, which is an ELF core that crash,
// gdb and Volatility read. libvirt stops a running guest's vCPUs for the dump (it is not
// live), as KubeVirt's does.
func (c *Conn) MemoryDump(name, path string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error {
		return d.CoreDumpWithFormat(path, libvirt.DOMAIN_CORE_DUMP_FORMAT_RAW, libvirt.DUMP_MEMORY_ONLY)
	})
}

func (c *Conn) Shutdown(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error {
		return d.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_ACPI_POWER_BTN)
	})
}

func (c *Conn) Destroy(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.Destroy() })
}

// Undefine keeps the EFI variables and the TPM's state: those that persist live on the VM's
// state claim, and the others die with the launcher's private directory anyway. (libvirt
// refuses to undefine a domain with NVRAM without a word on it.)
func (c *Conn) Undefine(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error {
		return d.UndefineFlags(libvirt.DOMAIN_UNDEFINE_KEEP_NVRAM | libvirt.DOMAIN_UNDEFINE_KEEP_TPM)
	})
}

func (c *Conn) State(name string) (DomainState, error) {
	var s DomainState
	err := c.withDomain(name, func(d *libvirt.Domain) error {
		state, reason, err := d.GetState()
		if err != nil {
			return err
		}
		switch state {
		case libvirt.DOMAIN_RUNNING, libvirt.DOMAIN_BLOCKED:
			s.State = StateRunning
		case libvirt.DOMAIN_PAUSED:
			s.State = StatePaused
			s.Reason = pausedReason(libvirt.DomainPausedReason(reason))
		case libvirt.DOMAIN_SHUTDOWN:
			s.State = StateShuttingDown
		case libvirt.DOMAIN_SHUTOFF:
			s.State = StateShutoff
			s.Reason = shutoffReason(libvirt.DomainShutoffReason(reason))
		case libvirt.DOMAIN_CRASHED:
			s.State = StateCrashed
		default:
			s.State = StateOther
		}
		return nil
	})
	return s, err
}

// Migrate migrates live and peer to peer, the target domain persistent like the source's;
// the source keeps its (stopped) definition, so its end reads as Shutoff/Migrated.
func (c *Conn) Migrate(name string, p MigrateParams) error {
	flags := libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER | libvirt.MIGRATE_PERSIST_DEST | libvirt.MIGRATE_ABORT_ON_ERROR
	params := &libvirt.DomainMigrateParameters{URISet: true, URI: p.MemoryURI}
	if len(p.CopyDisks) > 0 {
		// Incremental: the target has the disks' backing images (the same containerDisk).
		flags |= libvirt.MIGRATE_NON_SHARED_INC
		params.MigrateDisksSet, params.MigrateDisks = true, p.CopyDisks
		params.DisksURISet, params.DisksURI = true, p.DisksURI
	}
	if p.BandwidthMiB > 0 {
		params.BandwidthSet, params.Bandwidth = true, p.BandwidthMiB
	}
	if p.AutoConverge {
		flags |= libvirt.MIGRATE_AUTO_CONVERGE
	}
	if p.PostCopy {
		flags |= libvirt.MIGRATE_POSTCOPY
	}
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.MigrateToURI3(p.DestURI, params, flags) })
}

func (c *Conn) JobStats(name string) (JobStats, error) {
	var s JobStats
	err := c.withDomain(name, func(d *libvirt.Domain) error {
		j, err := d.GetJobStats(0)
		if err != nil {
			return err
		}
		s.Active = j.Type != libvirt.DOMAIN_JOB_NONE && j.Type != libvirt.DOMAIN_JOB_COMPLETED
		s.DataTotal, s.DataProcessed, s.DataRemaining = j.DataTotal, j.DataProcessed, j.DataRemaining
		s.MemoryBps = j.MemBps
		if j.MemDirtyRateSet && j.MemPageSizeSet {
			s.DirtyRate = j.MemDirtyRate * j.MemPageSize
		}
		return nil
	})
	return s, err
}

func (c *Conn) AbortJob(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.AbortJob() })
}

func (c *Conn) StartPostCopy(name string) error {
	return c.withDomain(name, func(d *libvirt.Domain) error { return d.MigrateStartPostCopy(0) })
}

var _ Hypervisor = (*Conn)(nil)

// statsTypes are the groups of statistics Stats asks for.
const statsTypes = libvirt.DOMAIN_STATS_CPU_TOTAL | libvirt.DOMAIN_STATS_BALLOON |
	libvirt.DOMAIN_STATS_VCPU | libvirt.DOMAIN_STATS_INTERFACE | libvirt.DOMAIN_STATS_BLOCK

func (c *Conn) Stats(name string) (DomainStats, error) {
	var out DomainStats
	err := c.withDomain(name, func(d *libvirt.Domain) error {
		// NOWAIT: a monitor busy with a job (a long block query, a migration) makes libvirt
		// skip what needs it instead of queueing behind it.
		all, err := c.conn.GetAllDomainStats([]*libvirt.Domain{d}, statsTypes, libvirt.CONNECT_GET_ALL_DOMAINS_STATS_NOWAIT)
		if err != nil {
			return fmt.Errorf("domain stats: %w", err)
		}
		if len(all) != 1 {
			return fmt.Errorf("domain stats: %d records for one domain", len(all))
		}
		out = convertStats(all[0])
		return nil
	})
	return out, err
}

func convertStats(s libvirt.DomainStats) DomainStats {
	var out DomainStats
	if s.Cpu != nil && s.Cpu.TimeSet {
		out.CPUTime = ptr.To(s.Cpu.Time)
	}
	if b := s.Balloon; b != nil {
		out.CurrentKiB = setOrNil(b.CurrentSet, b.Current)
		out.MaximumKiB = setOrNil(b.MaximumSet, b.Maximum)
		out.RSSKiB = setOrNil(b.RssSet, b.Rss)
		out.AvailableKiB = setOrNil(b.AvailableSet, b.Available)
	}
	for i, v := range s.Vcpu {
		if !v.TimeSet {
			continue // a vCPU that is not plugged
		}
		out.VCPUs = append(out.VCPUs, VCPUStats{ID: uint32(i), State: vcpuState(v), Time: v.Time})
	}
	for _, n := range s.Net {
		if !n.NameSet {
			continue
		}
		out.Net = append(out.Net, NetStats{
			Name: n.Name, RxBytes: n.RxBytes, RxPackets: n.RxPkts, RxErrors: n.RxErrs, RxDropped: n.RxDrop,
			TxBytes: n.TxBytes, TxPackets: n.TxPkts, TxErrors: n.TxErrs, TxDropped: n.TxDrop,
		})
	}
	for _, b := range s.Block {
		// Without the BACKING flag libvirt reports each disk's top image only (whose
		// backingIndex, under -blockdev, is set too): an overlay's backing image is not a disk.
		if !b.NameSet {
			continue
		}
		out.Block = append(out.Block, BlockStats{
			Name: b.Name, ReadBytes: b.RdBytes, ReadRequests: b.RdReqs, ReadTime: b.RdTimes,
			WriteBytes: b.WrBytes, WriteRequests: b.WrReqs, WriteTime: b.WrTimes, FlushRequests: b.FlReqs,
		})
	}
	return out
}

func vcpuState(v libvirt.DomainStatsVcpu) string {
	if !v.StateSet {
		return "unknown"
	}
	switch v.State {
	case libvirt.VCPU_RUNNING:
		return "running"
	case libvirt.VCPU_BLOCKED:
		return "blocked"
	case libvirt.VCPU_OFFLINE:
		return "offline"
	}
	return "unknown"
}

func setOrNil(set bool, v uint64) *uint64 {
	if !set {
		return nil
	}
	return ptr.To(v)
}
