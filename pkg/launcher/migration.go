package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"libvirt.org/go/libvirtxml"

	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
	"github.com/hangarvm/hangar/pkg/migration/tunnel"
)

// Live migration as a launcher sees it. The source launcher asks its libvirtd for a
// peer-to-peer migration whose three streams (libvirt's RPC, QEMU's memory stream, the NBD
// copy of the disks that are not shared) all go to unix sockets of its own; it hands each
// connection to virt-handler through the migration socket (tunnel.go), and the handlers
// carry it to the target launcher, which connects it to its libvirtd or its QEMU. libvirt
// gives the sockets' paths to the target as they are, so both launchers must use the same
// paths: they do, as every launcher pod mounts its volumes at the same places.

// Reasons of a failed migration.
const (
	ReasonMigrationFailed   = "MigrationFailed"
	ReasonMigrationAborted  = "MigrationAborted"
	ReasonProgressTimeout   = "MigrationProgressTimeout"
	ReasonCompletionTimeout = "MigrationCompletionTimeout"
	// ReasonMigrated ends a source launcher: its guest runs on the target now.
	ReasonMigrated = "Migrated"
)

// migrationPoll is how often a migration's statistics are read; progressEvery how often
// they are reported.
const (
	migrationPoll = 500 * time.Millisecond
	progressEvery = time.Second
)

// outgoing is the migration under way out of this launcher.
type outgoing struct {
	uid  string
	opts api.MigrationOptions
	// upstreams are the handler's idle connections for this migration's streams.
	upstreams chan *upstream
	listeners []func()
	done      chan struct{}

	mu          sync.Mutex
	abortReason string // set once the migration is being aborted
	postCopy    bool
}

// abort marks the migration for abort with reason; the first reason stays.
func (o *outgoing) abort(reason string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.abortReason != "" || o.postCopy {
		return false
	}
	o.abortReason = reason
	return true
}

func (o *outgoing) aborting() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.abortReason
}

// PrepareTarget makes this launcher the target of migration uid: the guest's volumes and
// network as for a start, and no domain; libvirt defines it when the guest arrives, and
// the launcher takes it over once it runs.
func (l *Launcher) PrepareTarget(ctx context.Context, req api.MigrationTargetRequest) (api.State, error) {
	vmi, uid := req.VMI, req.UID
	if string(vmi.UID) != l.cfg.UID {
		return l.State(), fmt.Errorf("%w: launcher of instance %s got instance %s", errConflict, l.cfg.UID, vmi.UID)
	}
	if uid == "" {
		return l.State(), fmt.Errorf("%w: a migration target needs the migration's uid", errInvalid)
	}
	l.startMu.Lock()
	defer l.startMu.Unlock()
	l.mu.Lock()
	if l.vmi != nil {
		defer l.mu.Unlock()
		if m := l.state.Migration; m != nil && m.Role == api.MigrationTarget && m.UID == uid {
			return l.state, nil
		}
		return l.state, fmt.Errorf("%w: the launcher runs its guest or prepares for another migration", errConflict)
	}
	l.vmi = vmi.DeepCopy()
	l.setStateLocked(api.PhaseStarting, "", "")
	l.mu.Unlock()
	l.seedQEMUCapabilities(req.QEMUCapabilities, vmi)

	opts, ifaces, err := l.prepare(ctx, vmi)
	if err == nil {
		err = os.MkdirAll(opts.Layout.MigrationDir, 0o700)
	}
	var dom *libvirtxml.Domain
	if err == nil {
		// Not to define it (the source's definition arrives with the guest), but to know
		// it as if this launcher had started it: a later migration out of here needs that.
		dom, err = domain.Convert(vmi, opts)
	}
	if err != nil {
		l.setState(api.PhaseFailed, "MigrationTargetFailed", err.Error())
		return l.State(), err
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.copyDisks, l.hasSerial = disksToCopy(dom, opts.Layout), len(dom.Devices.Serials) > 0
	l.diskBuses = diskBuses(dom)
	l.state.Domain = l.DomainName()
	l.state.Interfaces = ifaces
	l.devices = namesOf(vmi, dom, opts.Taps)
	l.setMigrationLocked(func(m *api.Migration) {
		*m = api.Migration{UID: uid, Role: api.MigrationTarget, StartedAt: &now}
	})
	l.setStateLocked(api.PhaseIncoming, "", "")
	return l.state, nil
}

// Migrate starts the migration of the running guest to the target behind the tunnel and
// returns at once; the migration's progress and end follow in State().Migration.
func (l *Launcher) Migrate(req api.MigrateRequest) (api.State, error) {
	if req.UID == "" {
		return l.State(), fmt.Errorf("%w: a migration needs its uid", errInvalid)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.state.Migration; m != nil && m.UID == req.UID && m.Role == api.MigrationSource {
		return l.state, nil // asked again: the answer is its state
	}
	if l.out != nil {
		return l.state, fmt.Errorf("%w: migration %s is under way", errConflict, l.out.uid)
	}
	if l.state.Phase != api.PhaseRunning {
		return l.state, fmt.Errorf("%w: only a running guest migrates; the guest is %q", errConflict, l.state.Phase)
	}
	if len(l.hotplugged) > 0 {
		// Its disks' sources are this launcher's descriptors, which the target does not hold.
		return l.state, fmt.Errorf("%w: a guest with hotplugged volumes (%s) cannot migrate yet", errConflict, strings.Join(sortedKeys(l.hotplugged), ", "))
	}
	o := &outgoing{uid: req.UID, opts: req.Options, upstreams: make(chan *upstream, maxIdleUpstreams), done: make(chan struct{})}
	if err := l.listenForStreams(o); err != nil {
		o.close()
		return l.state, fmt.Errorf("migration sockets: %w", err)
	}
	l.out = o
	now := time.Now()
	l.setMigrationLocked(func(m *api.Migration) {
		*m = api.Migration{UID: req.UID, Role: api.MigrationSource, StartedAt: &now, Mode: api.MigrationPreCopy}
	})
	go l.runMigration(o, l.state.Domain)
	return l.state, nil
}

// AbortMigration cancels migration uid. A migration in post-copy cannot be cancelled: the
// guest runs on the target already.
func (l *Launcher) AbortMigration(uid string) (api.State, error) {
	l.mu.Lock()
	o, name := l.out, l.state.Domain
	if o == nil || o.uid != uid {
		defer l.mu.Unlock()
		if m := l.state.Migration; m != nil && m.UID == uid && m.Role == api.MigrationSource {
			// Over already: an abort of a finished migration is a failed abort.
			if m.AbortStatus == "" {
				l.setMigrationLocked(func(m *api.Migration) { m.AbortStatus = api.AbortFailed })
			}
			return l.state, nil
		}
		return l.state, fmt.Errorf("%w: no migration %s under way", errConflict, uid)
	}
	if !o.abort(ReasonMigrationAborted) {
		defer l.mu.Unlock()
		if o.aborting() == "" { // post-copy
			l.setMigrationLocked(func(m *api.Migration) { m.AbortStatus = api.AbortFailed })
			return l.state, fmt.Errorf("%w: the migration is in post-copy and cannot be aborted", errConflict)
		}
		return l.state, nil
	}
	l.setMigrationLocked(func(m *api.Migration) { m.AbortStatus = api.AbortAborting })
	l.mu.Unlock()
	// The monitor repeats it until libvirt has a job to abort.
	if err := l.hv.AbortJob(name); err != nil {
		klog.V(2).InfoS("abort migration: no job yet", "err", err)
	}
	return l.State(), nil
}

// runMigration drives one outgoing migration to its end.
func (l *Launcher) runMigration(o *outgoing, name string) {
	lay := l.Layout()
	l.mu.Lock()
	disks := l.copyDisks
	l.mu.Unlock()
	p := virt.MigrateParams{
		DestURI:      "qemu+unix:///session?socket=" + lay.MigrationSocket(string(tunnel.StreamLibvirt)),
		MemoryURI:    "unix://" + lay.MigrationSocket(string(tunnel.StreamMemory)),
		DisksURI:     "unix://" + lay.MigrationSocket(string(tunnel.StreamDisks)),
		CopyDisks:    disks,
		BandwidthMiB: o.opts.BandwidthMiB,
		AutoConverge: o.opts.AllowAutoConverge,
		PostCopy:     o.opts.AllowPostCopy,
	}
	klog.InfoS("migration starting", "uid", o.uid, "copyDisks", disks, "options", o.opts)
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		l.monitorMigration(o, name)
	}()
	err := l.hv.Migrate(name, p)
	close(o.done)
	<-monitorDone

	now := time.Now()
	reason := o.aborting()
	l.mu.Lock()
	l.out = nil // no upstream joins o after this
	l.setMigrationLocked(func(m *api.Migration) {
		m.EndedAt = &now
		if err == nil {
			m.Completed = true
			if m.AbortStatus == api.AbortAborting {
				m.AbortStatus = api.AbortFailed // too late: it completed
			}
			return
		}
		m.Failed = true
		m.Reason = ReasonMigrationFailed
		if reason != "" {
			m.Reason = reason
		}
		m.Message = truncateMessage(err.Error())
		if m.AbortStatus == api.AbortAborting {
			m.AbortStatus = api.AbortSucceeded
		}
	})
	l.mu.Unlock()
	o.close()
	if err != nil {
		klog.InfoS("migration failed; the guest stays", "uid", o.uid, "reason", reason, "err", err)
	} else {
		klog.InfoS("migration completed", "uid", o.uid)
	}
	l.refresh()
}

// monitorMigration reports the migration's progress and enforces its timeouts until it ends.
func (l *Launcher) monitorMigration(o *outgoing, name string) {
	ticker := time.NewTicker(migrationPoll)
	defer ticker.Stop()
	start := time.Now()
	var lowest uint64
	lastProgress, lastReport := start, time.Time{}
	for {
		select {
		case <-o.done:
			return
		case <-ticker.C:
		}
		if o.aborting() != "" {
			_ = l.hv.AbortJob(name) // again: the first may have come before libvirt's job
			continue
		}
		st, err := l.hv.JobStats(name)
		if err != nil || !st.Active {
			continue
		}
		now := time.Now()
		if lowest == 0 || st.DataRemaining < lowest {
			lowest, lastProgress = st.DataRemaining, now
		}
		if now.Sub(lastReport) >= progressEvery {
			lastReport = now
			l.mu.Lock()
			l.setMigrationLocked(func(m *api.Migration) {
				m.DataTotalBytes, m.DataProcessedBytes, m.DataRemainingBytes = st.DataTotal, st.DataProcessed, st.DataRemaining
				m.MemoryBytesPerSecond, m.DirtyRateBytesPerSecond = st.MemoryBps, st.DirtyRate
			})
			l.mu.Unlock()
		}
		o.mu.Lock()
		postCopy := o.postCopy
		o.mu.Unlock()
		if postCopy {
			continue // nothing to abort any more; it ends when the target has every page
		}
		if t := o.opts.ProgressTimeoutSeconds; t > 0 && now.Sub(lastProgress) > time.Duration(t)*time.Second {
			if o.abort(ReasonProgressTimeout) {
				klog.InfoS("migration made no progress; aborting", "uid", o.uid, "for", now.Sub(lastProgress))
				_ = l.hv.AbortJob(name)
			}
			continue
		}
		if t := o.opts.CompletionTimeoutPerGiBSeconds; t > 0 && now.Sub(start) > completionTimeout(t, st.DataTotal) {
			if o.opts.AllowPostCopy {
				if err := l.hv.StartPostCopy(name); err != nil {
					klog.ErrorS(err, "switch to post-copy")
					continue
				}
				klog.InfoS("migration switched to post-copy", "uid", o.uid)
				o.mu.Lock()
				o.postCopy = true
				o.mu.Unlock()
				l.mu.Lock()
				l.setMigrationLocked(func(m *api.Migration) { m.Mode = api.MigrationPostCopy })
				l.mu.Unlock()
			} else if o.abort(ReasonCompletionTimeout) {
				klog.InfoS("migration did not complete in time; aborting", "uid", o.uid)
				_ = l.hv.AbortJob(name)
			}
		}
	}
}

// completionTimeout is what a migration of total bytes may take: perGiB seconds for every
// GiB begun, as KubeVirt's completionTimeoutPerGiB.
func completionTimeout(perGiB int64, total uint64) time.Duration {
	gib := max(int64((total+(1<<30)-1)>>30), 1)
	return time.Duration(perGiB*gib) * time.Second
}

// setMigrationLocked changes the migration's state through a copy (State() hands out the
// pointer) and records an event; the caller holds l.mu.
func (l *Launcher) setMigrationLocked(f func(*api.Migration)) {
	var m api.Migration
	if l.state.Migration != nil {
		m = *l.state.Migration
	}
	f(&m)
	l.state.Migration = &m
	l.recordLocked()
}

// disksToCopy are the disks a migration copies: the writable ones in the launcher's own
// ephemeral directory (containerDisk overlays, empty disks). Claims are shared (a claim that
// is not is no live migration), and read-only disks the target makes the same itself.
func disksToCopy(dom *libvirtxml.Domain, lay domain.Layout) []string {
	var out []string
	if dom.Devices == nil {
		return nil
	}
	for _, d := range dom.Devices.Disks {
		if d.Device != "disk" || d.ReadOnly != nil || d.Source == nil || d.Source.File == nil || d.Target == nil {
			continue
		}
		if strings.HasPrefix(d.Source.File.File, lay.EphemeralDir+"/") {
			out = append(out, d.Target.Dev)
		}
	}
	return out
}

// refreshIncoming follows a migration target's domain: it attaches the console as soon as
// libvirt has made the domain (QEMU's serial socket exists then, and nothing the guest prints
// after the switch-over is lost), and takes the guest over once it runs here.
func (l *Launcher) refreshIncoming(name string, ds virt.DomainState, err error) {
	l.mu.Lock()
	if err == nil {
		l.incomingSeen = true
	}
	seen, attach := l.incomingSeen, l.incomingSeen && l.hasSerial && l.console == nil
	l.mu.Unlock()
	if attach {
		if aerr := l.attachConsole(l.Layout().SerialSocket); aerr != nil {
			klog.ErrorS(aerr, "serial console of the arriving guest", "domain", name)
		}
	}
	phase, reason, arrived := incomingState(ds, err, seen)
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case arrived:
		l.setMigrationLocked(func(m *api.Migration) { m.Completed, m.EndedAt = true, &now })
		l.setStateLocked(api.PhaseRunning, "", "")
		// The guest's agent came along with it, on this launcher's channel now.
		l.startAgentLoopLocked(name)
		klog.InfoS("the migrating guest arrived and runs here", "domain", name)
	case phase == api.PhaseFailed:
		l.setMigrationLocked(func(m *api.Migration) {
			m.Failed, m.EndedAt, m.Reason = true, &now, reason
			m.Message = "the incoming guest did not arrive: libvirt ended its domain here"
		})
		l.setStateLocked(api.PhaseFailed, reason, "the incoming migration failed")
	}
}

// incomingState is the phase a migration target's domain state implies; arrived says the
// guest now runs here.
func incomingState(ds virt.DomainState, err error, seen bool) (phase api.Phase, reason string, arrived bool) {
	switch {
	case errors.Is(err, virt.ErrNoDomain):
		if seen {
			return api.PhaseFailed, ReasonMigrationFailed, false // libvirt removed it: the migration failed
		}
		return api.PhaseIncoming, "", false
	case err != nil:
		return api.PhaseIncoming, "", false
	}
	switch ds.State {
	case virt.StateRunning:
		return api.PhaseRunning, "", true
	case virt.StatePaused:
		if ds.Reason == "PostCopyFailed" {
			return api.PhaseFailed, ReasonMigrationFailed, false
		}
		return api.PhaseIncoming, "", false // arriving
	case virt.StateShutoff, virt.StateCrashed:
		return api.PhaseFailed, ReasonMigrationFailed, false
	}
	return api.PhaseIncoming, "", false
}

func truncateMessage(s string) string {
	const max = 1024
	if len(s) > max {
		return s[:max]
	}
	return s
}
