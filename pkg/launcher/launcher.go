// Package launcher is virt-launcher: it runs one instance's guest with a private libvirtd
// and serves the handler's commands (package api) on a unix socket in the directory it
// shares with virt-handler. It exits when the guest is gone.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"libvirt.org/go/libvirtxml"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Config is a launcher's instance and environment.
type Config struct {
	Namespace, Name, UID string
	// SocketDir is shared with virt-handler: the command, console and VNC sockets.
	SocketDir string
	// RunDir is private: QEMU's serial socket, cloud-init ISOs, the console log.
	RunDir string
	// EphemeralDir holds the guest's ephemeral disks (containerDisk overlays, empty disks);
	// <RunDir>/ephemeral when empty. In a pod it is a volume of its own, sized for them.
	EphemeralDir string
	// UseEmulation runs the guest under TCG.
	UseEmulation bool
	// ContainerDiskRoot holds, per containerDisk volume, <root>/<volume>/ with the files of
	// the volume's image (the disk under disk/).
	ContainerDiskRoot string
	// KernelBootRoot holds the files of the kernelBoot container image.
	KernelBootRoot string
	// LibvirtSocket is the private libvirtd's socket: a migration's target connects the
	// source libvirtd's calls to it.
	LibvirtSocket string
	// SecretsDir holds, per Secret a cloudInitNoCloud volume names, <dir>/<secret>/<key>.
	SecretsDir string
	// PVCDir and BlockDir override domain.DefaultLayout's.
	PVCDir, BlockDir string
	// FDSetDir overrides layout.FDSetDir, where the placeholders of hotplug's fd sets go
	// (tests); QEMU's names for the sets stay /dev/fdset/<id>.
	FDSetDir string
	// Network prepares the guest's interfaces; nil when the instance has none.
	Network Network
	// FinalWait is how long a final state waits for the handler to read it before the
	// launcher exits anyway.
	FinalWait time.Duration
	// DefaultGrace is the shutdown grace period when the instance has none.
	DefaultGrace time.Duration
	// LibvirtStateDir is libvirtd's session directory (libvirtd.Env): the TPM's state lives
	// below its configuration directory.
	LibvirtStateDir string
	// VMStateDir is where the VM's state claim is mounted (EFI variables and TPM state that
	// outlive the instance); empty when the launcher pod has none.
	VMStateDir string
	// AgentPoll is how often the guest agent is asked for the guest's interfaces.
	AgentPoll time.Duration
}

// Network prepares the pod side of an instance's interfaces.
type Network interface {
	// Setup returns, per interface name, the tap device QEMU uses, and the interfaces to report.
	Setup(ctx context.Context, vmi *v1.VirtualMachineInstance) (map[string]string, []api.Interface, error)
}

// Launcher runs one guest.
type Launcher struct {
	cfg Config
	hv  virt.Hypervisor

	startMu sync.Mutex // one Sync at a time

	mu        sync.Mutex
	vmi       *v1.VirtualMachineInstance
	state     api.State
	events    []api.Event // the latest few, for long polls
	changed   chan struct{}
	stopAsked bool // Shutdown or SIGTERM: a destroyed guest then succeeded
	finalRead chan struct{}
	finalOnce sync.Once
	console   *consoleRelay
	stopTimer *time.Timer

	agent       virt.GuestAgent // nil when the hypervisor offers no agent access
	agentKick   chan struct{}   // an agent event: poll now
	agentCancel context.CancelFunc
	thawTimer   *time.Timer
	diskBuses   map[string]string // domain disk target (vda, sda) → bus, for the agent's file systems
	// copyDisks are the guest's disks a migration copies (target device names); hasSerial
	// says whether the domain has a serial console.
	copyDisks []string
	hasSerial bool
	// out is the migration under way out of this launcher.
	out *outgoing
	// incomingSeen: as a migration target, libvirt has defined the arriving domain.
	incomingSeen bool
	devices      deviceNames // for Stats
	stats        *statsCall  // the one under way
	// handedOver are descriptors virt-handler handed over for volumes not attached yet;
	// hotplugged the volumes attached to the running guest (hotplug.go).
	handedOver map[string][]*os.File
	fdSets     int // hotplug's fd sets so far
	hotplugged map[string]*hotplugged
	// coldHotpluggable are hotpluggable volumes the domain started with (the pod had them).
	coldHotpluggable map[string]bool
	// dumps are the memory dumps handed over, by volume (memorydump.go).
	dumps map[string]*memoryDump
}

const keptEvents = 64

// New returns a launcher that drives its guest through hv.
func New(cfg Config, hv virt.Hypervisor) *Launcher {
	if cfg.FinalWait == 0 {
		cfg.FinalWait = 30 * time.Second
	}
	if cfg.DefaultGrace == 0 {
		cfg.DefaultGrace = time.Duration(v1.DefaultGracePeriodSeconds) * time.Second
	}
	agent, _ := hv.(virt.GuestAgent)
	return &Launcher{
		cfg:       cfg,
		hv:        hv,
		state:     api.State{UID: cfg.UID, ReadOnlyCopies: true},
		changed:   make(chan struct{}),
		finalRead: make(chan struct{}),
		agent:     agent,
		agentKick: make(chan struct{}, 1),
	}
}

// Layout is where this launcher keeps the domain's files.
func (l *Launcher) Layout() domain.Layout {
	lay := domain.DefaultLayout(l.cfg.RunDir)
	if l.cfg.EphemeralDir != "" {
		lay.EphemeralDir = l.cfg.EphemeralDir
	}
	lay.VNCSocket = filepath.Join(l.cfg.SocketDir, api.VNCSocketName)
	if l.cfg.PVCDir != "" {
		lay.PVCDir = l.cfg.PVCDir
	}
	if l.cfg.BlockDir != "" {
		lay.BlockDir = l.cfg.BlockDir
	}
	return lay
}

// DomainName is the libvirt name of the launcher's domain.
func (l *Launcher) DomainName() string {
	return l.cfg.Namespace + "_" + l.cfg.Name
}

// State is the current state.
func (l *Launcher) State() api.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.Phase.Final() {
		l.finalOnce.Do(func() { close(l.finalRead) })
	}
	return l.state
}

// setState records a new state and wakes long polls; the caller holds l.mu.
func (l *Launcher) setStateLocked(phase api.Phase, reason, message string) {
	if l.state.Phase.Final() {
		return // an end is an end
	}
	if l.state.Phase == phase && l.state.Reason == reason {
		return
	}
	klog.InfoS("guest state", "phase", phase, "reason", reason, "message", message)
	l.state.Phase, l.state.Reason, l.state.Message = phase, reason, message
	if m := l.state.Migration; phase == api.PhaseSucceeded && reason == ReasonMigrated &&
		m != nil && m.Role == api.MigrationSource && m.EndedAt == nil {
		// libvirt ends the source domain before its migrate call returns: the state that
		// says the guest left must say the migration completed too, or a reader of this one
		// event would take the guest for ended.
		done := *m
		now := time.Now()
		done.Completed, done.EndedAt = true, &now
		l.state.Migration = &done
	}
	l.recordLocked()
}

// recordLocked records the current state as an event and wakes long polls; the caller holds
// l.mu.
func (l *Launcher) recordLocked() {
	l.state.Seq++
	l.events = append(l.events, api.Event{Seq: l.state.Seq, State: l.state})
	if len(l.events) > keptEvents {
		l.events = l.events[len(l.events)-keptEvents:]
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Launcher) setState(phase api.Phase, reason, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setStateLocked(phase, reason, message)
}

// Events returns the events after seq, waiting up to wait for one.
func (l *Launcher) Events(ctx context.Context, after uint64, wait time.Duration) api.Events {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		var out []api.Event
		for _, e := range l.events {
			if e.Seq > after {
				out = append(out, e)
			}
		}
		state, changed := l.state, l.changed
		l.mu.Unlock()
		if len(out) > 0 || state.Seq < after {
			if state.Phase.Final() {
				l.finalOnce.Do(func() { close(l.finalRead) })
			}
			return api.Events{Events: out, State: state}
		}
		select {
		case <-changed:
		case <-timer.C:
			return api.Events{State: state}
		case <-ctx.Done():
			return api.Events{State: state}
		}
	}
}

// errConflict marks a command the guest's state does not allow; errInvalid a malformed one.
var (
	errConflict = errors.New("conflict")
	errInvalid  = errors.New("invalid")
)

// Sync defines and starts the guest on the first call; later calls only report the state
// (an instance's spec never changes).
func (l *Launcher) Sync(ctx context.Context, req api.SyncRequest) (api.State, error) {
	vmi := req.VMI
	if string(vmi.UID) != l.cfg.UID {
		return l.State(), fmt.Errorf("%w: launcher of instance %s got instance %s", errConflict, l.cfg.UID, vmi.UID)
	}
	l.startMu.Lock()
	defer l.startMu.Unlock()
	l.mu.Lock()
	started := l.vmi != nil
	if !started {
		l.vmi = vmi.DeepCopy()
		l.setStateLocked(api.PhaseStarting, "", "")
	}
	l.mu.Unlock()
	if started {
		// A running guest follows the spec's hotplugged volumes; nothing else of a running
		// instance's spec changes.
		err := l.syncHotplug(vmi)
		l.syncMemoryDumps(vmi)
		return l.State(), err
	}
	seeded := l.seedQEMUCapabilities(req.QEMUCapabilities, vmi)
	cold := withoutHotplug(vmi, l.Layout())
	l.mu.Lock()
	l.coldHotpluggable = map[string]bool{}
	for name := range hotplugVolumes(cold) {
		l.coldHotpluggable[name] = true
	}
	l.mu.Unlock()
	if err := l.start(ctx, cold); err != nil {
		l.logFailureDetails(err)
		l.setState(api.PhaseFailed, failureReason(err), err.Error())
		_ = l.hv.Destroy(l.DomainName())
		return l.State(), err
	}
	seeded.report()
	err := l.syncHotplug(vmi)
	l.syncMemoryDumps(vmi)
	return l.State(), err
}

func (l *Launcher) start(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	opts, ifaces, err := l.prepare(ctx, vmi)
	if err != nil {
		return err
	}
	dom, err := domain.Convert(vmi, opts)
	if err != nil {
		return err
	}
	if dropped := vmi.Spec.KVMOnlyFeatures(); opts.UseEmulation && len(dropped) > 0 {
		klog.InfoS("software emulation: left out what only KVM offers", "fields", dropped)
	}
	buses := diskBuses(dom)
	l.mu.Lock()
	l.copyDisks, l.hasSerial = disksToCopy(dom, opts.Layout), len(dom.Devices.Serials) > 0
	l.mu.Unlock()
	xml, err := dom.Marshal()
	if err != nil {
		return err
	}
	name := dom.Name
	// A launcher starts with a fresh libvirtd, but its state directory may not be fresh (a
	// development root, a restarted container): an old definition of the name goes first.
	if _, err := l.hv.State(name); err == nil {
		klog.InfoS("removing a stale definition of the domain", "domain", name)
		_ = l.hv.Destroy(name)
		_ = l.hv.Undefine(name)
	}
	if err := l.hv.Define(xml); err != nil {
		return failed(ReasonDomainDefineFailed, "define domain %s: %w", name, err)
	}
	_ = os.Remove(opts.Layout.VNCSocket) // QEMU leaves it behind; a stale one fails the start
	if err := l.hv.StartPaused(name); err != nil {
		return failed(ReasonDomainStartFailed, "start domain %s: %w", name, err)
	}
	// Attach the console before the first instruction runs: nothing the guest prints is lost.
	if len(dom.Devices.Serials) > 0 {
		if err := l.attachConsole(opts.Layout.SerialSocket); err != nil {
			return fmt.Errorf("serial console of %s: %w", name, err)
		}
	}
	phase := api.PhaseRunning
	if s := vmi.Spec.StartStrategy; s != nil && *s == v1.StartStrategyPaused {
		// virtctl start --paused: the guest stays paused until unpaused.
		phase = api.PhasePaused
	} else if err := l.hv.Resume(name); err != nil {
		return fmt.Errorf("resume domain %s: %w", name, err)
	}
	l.mu.Lock()
	l.state.Domain = name
	l.state.Interfaces = ifaces
	l.diskBuses = buses
	l.devices = namesOf(vmi, dom, opts.Taps)
	l.setStateLocked(phase, "", "")
	l.startAgentLoopLocked(name)
	l.mu.Unlock()
	return nil
}

// startAgentLoopLocked follows the guest agent of the running domain, unless the hypervisor
// offers no agent or a loop runs already; the caller holds l.mu.
func (l *Launcher) startAgentLoopLocked(name string) {
	if l.agent == nil || l.agentCancel != nil {
		return
	}
	agentCtx, cancel := context.WithCancel(context.Background())
	l.agentCancel = cancel
	go l.agentLoop(agentCtx, name, l.agentKick)
}

// diskBuses maps the domain's disk targets (vda, sda) to their buses, for the agent's file
// systems.
func diskBuses(dom *libvirtxml.Domain) map[string]string {
	buses := map[string]string{}
	if dom.Devices == nil {
		return buses
	}
	for _, d := range dom.Devices.Disks {
		if d.Target != nil {
			buses[d.Target.Dev] = d.Target.Bus
		}
	}
	return buses
}

// prepare makes what the guest's domain refers to: its volumes' files and, with the
// handler's part done, its network. A start and a migration target both need it.
func (l *Launcher) prepare(ctx context.Context, vmi *v1.VirtualMachineInstance) (domain.Options, []api.Interface, error) {
	opts := domain.Options{
		UseEmulation:   l.cfg.UseEmulation,
		Layout:         l.Layout(),
		KernelBootRoot: l.cfg.KernelBootRoot,
	}
	if err := os.MkdirAll(opts.Layout.EphemeralDir, 0o755); err != nil {
		return opts, nil, err
	}
	if err := checkKernelBoot(vmi, l.cfg.KernelBootRoot); err != nil {
		return opts, nil, err
	}
	if err := prepareVolumes(ctx, vmi, &l.cfg, &opts); err != nil {
		return opts, nil, err
	}
	if err := prepareState(vmi, &l.cfg, &opts); err != nil {
		return opts, nil, err
	}
	var ifaces []api.Interface
	if len(vmi.Spec.Domain.Devices.Interfaces) > 0 {
		if l.cfg.Network == nil {
			return opts, nil, fmt.Errorf("the instance has interfaces and this launcher sets up no network")
		}
		taps, reported, err := l.cfg.Network.Setup(ctx, vmi)
		if err != nil {
			return opts, nil, failed(ReasonNetworkSetupFailed, "network: %w", err)
		}
		opts.Taps, ifaces = taps, reported
		opts.MACs = map[string]string{}
		for _, i := range reported {
			opts.MACs[i.Name] = i.MAC
		}
	}
	return opts, ifaces, nil
}

// attachConsole relays the guest's serial console from QEMU's socket.
func (l *Launcher) attachConsole(socket string) error {
	serial, err := dialSerial(socket, 10*time.Second)
	if err != nil {
		return err
	}
	relay, err := startConsoleRelay(serial, filepath.Join(l.cfg.SocketDir, api.ConsoleSocketName), filepath.Join(l.cfg.RunDir, layout.ConsoleLogName))
	if err != nil {
		serial.Close()
		return fmt.Errorf("console relay: %w", err)
	}
	l.mu.Lock()
	l.console = relay
	l.mu.Unlock()
	return nil
}

// Pause suspends the guest's vCPUs.
func (l *Launcher) Pause() (api.State, error) {
	return l.command(api.PhaseRunning, func(name string) error { return l.hv.Suspend(name) })
}

// Unpause resumes a paused guest.
func (l *Launcher) Unpause() (api.State, error) {
	return l.command(api.PhasePaused, func(name string) error { return l.hv.Resume(name) })
}

// SoftReboot asks the guest to reboot.
func (l *Launcher) SoftReboot() (api.State, error) {
	return l.command(api.PhaseRunning, func(name string) error { return l.hv.Reboot(name) })
}

// Reset resets the guest at once (the reset button): a hard reset, which the guest does not
// see coming.
func (l *Launcher) Reset() (api.State, error) {
	return l.command(api.PhaseRunning, func(name string) error { return l.hv.Reset(name) })
}

// command runs f on the domain if the guest is in phase want; the state follows from the
// event libvirt sends.
func (l *Launcher) command(want api.Phase, f func(string) error) (api.State, error) {
	l.mu.Lock()
	phase, name := l.state.Phase, l.state.Domain
	l.mu.Unlock()
	if phase != want {
		return l.State(), fmt.Errorf("%w: the guest is %q, not %s", errConflict, phase, want)
	}
	if err := f(name); err != nil {
		return l.State(), err
	}
	l.refresh()
	return l.State(), nil
}

// Shutdown presses the ACPI power button and destroys the guest if it is still running
// after grace (the instance's grace period when nil). It returns at once.
func (l *Launcher) Shutdown(grace *time.Duration) (api.State, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.Phase.Final() {
		return l.state, nil
	}
	l.stopAsked = true
	g := l.cfg.DefaultGrace
	if l.vmi != nil && l.vmi.Spec.TerminationGracePeriodSeconds != nil {
		g = time.Duration(*l.vmi.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	if grace != nil {
		g = *grace
	}
	name := l.state.Domain
	if l.state.Phase == api.PhaseNone || name == "" {
		// Nothing runs yet (or the start is under way and will notice): done.
		l.setStateLocked(api.PhaseSucceeded, "Stopped", "stopped before the guest started")
		return l.state, nil
	}
	if l.state.Phase == api.PhaseIncoming {
		// A migration target whose guest has not arrived: nothing of the guest's is here to
		// stop (a half-arrived domain goes with the launcher, and the source keeps the guest).
		l.setStateLocked(api.PhaseSucceeded, "Stopped", "stopped before the migrating guest arrived")
		return l.state, nil
	}
	if l.state.Phase != api.PhaseShuttingDown {
		l.setStateLocked(api.PhaseShuttingDown, "", "")
		var err error
		if g <= 0 {
			err = l.hv.Destroy(name)
		} else if err = l.hv.Shutdown(name); err != nil {
			// A paused guest, or one without ACPI, cannot react to the button: destroy it.
			klog.InfoS("ACPI shutdown failed; destroying", "err", err)
			err = l.hv.Destroy(name)
		}
		if err != nil && !errors.Is(err, virt.ErrNoDomain) {
			klog.ErrorS(err, "stop guest")
		}
	}
	if l.stopTimer != nil {
		l.stopTimer.Stop()
	}
	l.stopTimer = time.AfterFunc(g, func() {
		if !l.State().Phase.Final() {
			klog.InfoS("grace period over; destroying the guest", "grace", g)
			_ = l.hv.Destroy(name)
		}
	})
	return l.state, nil
}

// refresh reads the domain's state from libvirt and derives the guest's phase.
func (l *Launcher) refresh() {
	l.mu.Lock()
	name, phase, stopAsked := l.state.Domain, l.state.Phase, l.stopAsked
	l.mu.Unlock()
	if name == "" || phase == api.PhaseStarting {
		return // start() sets Running itself; the paused start is not a pause
	}
	ds, err := l.hv.State(name)
	if phase == api.PhaseIncoming {
		l.refreshIncoming(name, ds, err)
		return
	}
	if errors.Is(err, virt.ErrNoDomain) {
		l.setState(api.PhaseFailed, "DomainLost", "libvirt no longer knows the domain")
		return
	}
	if err != nil {
		klog.ErrorS(err, "domain state")
		return
	}
	next, reason := phaseOf(ds, stopAsked)
	l.setState(next, reason, "")
}

// phaseOf maps libvirt's state to the guest's phase.
func phaseOf(ds virt.DomainState, stopAsked bool) (api.Phase, string) {
	switch ds.State {
	case virt.StateRunning:
		if stopAsked {
			return api.PhaseShuttingDown, ""
		}
		return api.PhaseRunning, ""
	case virt.StatePaused:
		switch {
		case stopAsked:
			return api.PhaseShuttingDown, ""
		case ds.Reason == "Migration" || ds.Reason == "PostCopy":
			// Stopped by libvirt for a migration's switch-over (or resumed elsewhere in
			// post-copy): the guest is not paused from its user's point of view.
			return api.PhaseRunning, ""
		case ds.Reason == "PostCopyFailed":
			return api.PhaseFailed, ReasonMigrationFailed
		}
		return api.PhasePaused, "PausedByUser"
	case virt.StateShuttingDown:
		return api.PhaseShuttingDown, ""
	case virt.StateShutoff:
		switch ds.Reason {
		case "Shutdown":
			return api.PhaseSucceeded, "GuestShutdown"
		case "Destroyed":
			if stopAsked {
				return api.PhaseSucceeded, "Stopped"
			}
			return api.PhaseFailed, "Destroyed"
		case "Crashed":
			return api.PhaseFailed, "QEMUCrashed"
		case "Migrated":
			return api.PhaseSucceeded, ReasonMigrated
		default:
			return api.PhaseFailed, "QEMU" + ds.Reason
		}
	case virt.StateCrashed:
		return api.PhaseFailed, "GuestCrashed"
	}
	return api.PhaseRunning, ""
}

// Run follows libvirt's events until the guest is gone and the handler has seen it (or
// FinalWait passed), or until ctx ends. stop is SIGTERM: the guest is shut down within its
// grace period.
func (l *Launcher) Run(ctx context.Context, stop <-chan struct{}) error {
	var final <-chan time.Time
	for {
		select {
		case ev := <-l.hv.Events():
			if ev.Domain == l.DomainName() {
				klog.V(2).InfoS("domain event", "kind", ev.Kind, "detail", ev.Detail)
				if ev.Kind == virt.EventAgent {
					select {
					case l.agentKick <- struct{}{}:
					default:
					}
				} else {
					l.refresh()
				}
			}
		case <-l.hv.Closed():
			l.setState(api.PhaseFailed, "LibvirtLost", "the connection to libvirtd closed")
			l.hv = closedHypervisor{l.hv}
		case <-stop:
			stop = nil
			_, _ = l.Shutdown(nil)
		case <-ctx.Done():
			return ctx.Err()
		case <-final:
			klog.InfoS("final state not read by the handler; exiting", "wait", l.cfg.FinalWait)
			return nil
		case <-l.finalRead:
			// Give the handler's answer time to leave before the socket goes.
			time.Sleep(200 * time.Millisecond)
			return nil
		}
		if final == nil && l.State().Phase.Final() {
			final = time.After(l.cfg.FinalWait)
		}
	}
}

// Close releases the console and removes the domain's definition.
func (l *Launcher) Close() {
	l.mu.Lock()
	relay, name := l.console, l.state.Domain
	l.console = nil
	if l.stopTimer != nil {
		l.stopTimer.Stop()
	}
	if l.thawTimer != nil {
		l.thawTimer.Stop()
	}
	if l.agentCancel != nil {
		l.agentCancel()
	}
	l.mu.Unlock()
	if relay != nil {
		relay.Close()
	}
	if name != "" {
		_ = l.hv.Destroy(name)
		_ = l.hv.Undefine(name)
	}
	_ = os.Remove(filepath.Join(l.cfg.SocketDir, api.ConsoleSocketName))
	_ = os.Remove(l.Layout().VNCSocket)
}

// closedHypervisor keeps Run from spinning on a closed connection's channels.
type closedHypervisor struct{ virt.Hypervisor }

func (closedHypervisor) Closed() <-chan struct{}   { return nil }
func (closedHypervisor) Events() <-chan virt.Event { return nil }
