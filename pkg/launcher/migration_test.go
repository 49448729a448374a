package launcher

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
	"github.com/hangarvm/hangar/pkg/migration/tunnel"
)

// fakeMigration is the fake hypervisor's migration: Migrate blocks until end receives the
// outcome (or an abort ends it), and JobStats reports stats.
type fakeMigration struct {
	params   virt.MigrateParams
	started  chan struct{}
	end      chan error
	stats    virt.JobStats
	postCopy bool
}

func (f *fakeHypervisor) Migrate(_ string, p virt.MigrateParams) error {
	f.mu.Lock()
	f.mig.params = p
	started, end := f.mig.started, f.mig.end
	f.mu.Unlock()
	if err := f.call("Migrate"); err != nil {
		return err
	}
	close(started)
	err := <-end
	f.mu.Lock()
	if err == nil {
		f.state = virt.DomainState{State: virt.StateShutoff, Reason: "Migrated"}
	}
	f.mu.Unlock()
	return err
}

func (f *fakeHypervisor) JobStats(string) (virt.JobStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mig.stats, nil
}

func (f *fakeHypervisor) AbortJob(string) error {
	f.mu.Lock()
	end, active := f.mig.end, f.mig.stats.Active
	f.mu.Unlock()
	if active {
		select {
		case end <- errors.New("operation aborted: migration out job: canceled by client"):
		default:
		}
	}
	return f.call("AbortJob")
}

func (f *fakeHypervisor) StartPostCopy(string) error {
	f.mu.Lock()
	f.mig.postCopy = true
	f.mu.Unlock()
	return f.call("StartPostCopy")
}

// migratingFake is a fake whose guest runs, ready to migrate.
func migratingFake(t *testing.T) (*fakeHypervisor, *Launcher) {
	hv := newFake()
	hv.mig = fakeMigration{started: make(chan struct{}), end: make(chan error, 1), stats: virt.JobStats{Active: true, DataTotal: 1 << 30, DataRemaining: 1 << 29}}
	l := newTestLauncher(t, hv)
	_, err := l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = l.Run(ctx, nil) }()
	return hv, l
}

// waitMigration waits until the launcher's migration satisfies cond.
func waitMigration(t *testing.T, l *Launcher, cond func(api.State) bool) api.State {
	t.Helper()
	var s api.State
	require.Eventually(t, func() bool {
		s = l.State()
		return s.Migration != nil && cond(s)
	}, 10*time.Second, 10*time.Millisecond, "migration state: %+v", s.Migration)
	return s
}

func TestMigrateCompletes(t *testing.T) {
	hv, l := migratingFake(t)
	s, err := l.Migrate(api.MigrateRequest{UID: "m1", Options: api.MigrationOptions{BandwidthMiB: 64, AllowAutoConverge: true}})
	require.NoError(t, err)
	require.NotNil(t, s.Migration)
	assert.Equal(t, api.MigrationSource, s.Migration.Role)
	assert.Equal(t, api.MigrationPreCopy, s.Migration.Mode)
	assert.NotNil(t, s.Migration.StartedAt)
	<-hv.mig.started

	lay := l.Layout()
	p := hv.mig.params
	assert.Equal(t, "qemu+unix:///session?socket="+lay.MigrationSocket("libvirt"), p.DestURI)
	assert.Equal(t, "unix://"+lay.MigrationSocket("memory"), p.MemoryURI)
	assert.Equal(t, "unix://"+lay.MigrationSocket("disks"), p.DisksURI)
	assert.Equal(t, uint64(64), p.BandwidthMiB)
	assert.True(t, p.AutoConverge)
	assert.False(t, p.PostCopy)

	// Progress is reported.
	s = waitMigration(t, l, func(s api.State) bool { return s.Migration.DataRemainingBytes == 1<<29 })
	assert.Equal(t, uint64(1<<30), s.Migration.DataTotalBytes)
	assert.Equal(t, api.PhaseRunning, s.Phase, "the guest runs while it migrates")

	// Asked again, the answer is the migration's state; another migration must wait.
	again, err := l.Migrate(api.MigrateRequest{UID: "m1"})
	require.NoError(t, err)
	assert.Equal(t, "m1", again.Migration.UID)
	_, err = l.Migrate(api.MigrateRequest{UID: "m2"})
	assert.ErrorIs(t, err, errConflict)

	// libvirt stops the source for the switch-over: still running from the user's view.
	hv.setState(virt.StatePaused, "Migration")
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, api.PhaseRunning, l.State().Phase)

	// libvirt ends the source domain before its migrate call returns: the event that says
	// so says the migration completed too.
	hv.setState(virt.StateShutoff, "Migrated")
	s = waitMigration(t, l, func(s api.State) bool { return s.Phase == api.PhaseSucceeded })
	require.NotNil(t, s.Migration)
	assert.True(t, s.Migration.Completed, "the guest's end by migration is the migration's completion")
	hv.mig.end <- nil
	s = waitMigration(t, l, func(s api.State) bool { return s.Phase == api.PhaseSucceeded && s.Migration.EndedAt != nil })
	assert.True(t, s.Migration.Completed)
	assert.False(t, s.Migration.Failed)
	assert.NotNil(t, s.Migration.EndedAt)
	assert.Equal(t, ReasonMigrated, s.Reason)
	// The local sockets are gone with the migration.
	for _, stream := range tunnel.Streams {
		assert.NoFileExists(t, lay.MigrationSocket(string(stream)))
	}
}

func TestMigrateFailureKeepsTheGuest(t *testing.T) {
	hv, l := migratingFake(t)
	_, err := l.Migrate(api.MigrateRequest{UID: "m1"})
	require.NoError(t, err)
	<-hv.mig.started
	hv.mig.end <- errors.New("unable to connect to the target")
	s := waitMigration(t, l, func(s api.State) bool { return s.Migration.Failed })
	assert.Equal(t, ReasonMigrationFailed, s.Migration.Reason)
	assert.Contains(t, s.Migration.Message, "unable to connect")
	assert.Equal(t, api.PhaseRunning, s.Phase)

	// A new migration may start.
	hv.mu.Lock()
	hv.mig.started, hv.mig.end = make(chan struct{}), make(chan error, 1)
	hv.mu.Unlock()
	s, err = l.Migrate(api.MigrateRequest{UID: "m2"})
	require.NoError(t, err)
	assert.Equal(t, "m2", s.Migration.UID)
	assert.False(t, s.Migration.Failed)
	hv.mig.end <- errors.New("again")
}

func TestAbortMigration(t *testing.T) {
	hv, l := migratingFake(t)
	_, err := l.AbortMigration("m1")
	assert.ErrorIs(t, err, errConflict, "nothing to abort")

	_, err = l.Migrate(api.MigrateRequest{UID: "m1"})
	require.NoError(t, err)
	<-hv.mig.started
	_, err = l.AbortMigration("other")
	assert.ErrorIs(t, err, errConflict)
	s, err := l.AbortMigration("m1")
	require.NoError(t, err)
	assert.Contains(t, []api.AbortStatus{api.AbortAborting, api.AbortSucceeded}, s.Migration.AbortStatus)
	s = waitMigration(t, l, func(s api.State) bool { return s.Migration.Failed })
	assert.Equal(t, ReasonMigrationAborted, s.Migration.Reason)
	assert.Equal(t, api.AbortSucceeded, s.Migration.AbortStatus)
	assert.Equal(t, api.PhaseRunning, s.Phase)
}

func TestMigrationTimeouts(t *testing.T) {
	t.Run("no progress aborts", func(t *testing.T) {
		hv, l := migratingFake(t)
		// The remaining data never shrinks.
		_, err := l.Migrate(api.MigrateRequest{UID: "m1", Options: api.MigrationOptions{ProgressTimeoutSeconds: 1}})
		require.NoError(t, err)
		s := waitMigration(t, l, func(s api.State) bool { return s.Migration.Failed })
		assert.Equal(t, ReasonProgressTimeout, s.Migration.Reason)
		assert.Contains(t, hv.Calls(), "AbortJob")
	})
	t.Run("too long aborts", func(t *testing.T) {
		hv, l := migratingFake(t)
		hv.mu.Lock()
		hv.mig.stats.DataTotal = 100 << 20 // 1 GiB begun: 1 s
		hv.mu.Unlock()
		_, err := l.Migrate(api.MigrateRequest{UID: "m1", Options: api.MigrationOptions{CompletionTimeoutPerGiBSeconds: 1}})
		require.NoError(t, err)
		stop := make(chan struct{})
		defer close(stop)
		go func() { // progress, steadily
			for i := uint64(1); ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				hv.mu.Lock()
				hv.mig.stats.DataRemaining = (1 << 29) - i<<20
				hv.mu.Unlock()
			}
		}()
		s := waitMigration(t, l, func(s api.State) bool { return s.Migration.Failed })
		assert.Equal(t, ReasonCompletionTimeout, s.Migration.Reason)
	})
	t.Run("too long switches to post-copy when allowed", func(t *testing.T) {
		hv, l := migratingFake(t)
		_, err := l.Migrate(api.MigrateRequest{UID: "m1", Options: api.MigrationOptions{CompletionTimeoutPerGiBSeconds: 1, AllowPostCopy: true}})
		require.NoError(t, err)
		<-hv.mig.started
		assert.True(t, hv.mig.params.PostCopy)
		s := waitMigration(t, l, func(s api.State) bool { return s.Migration.Mode == api.MigrationPostCopy })
		assert.False(t, s.Migration.Failed)
		// Post-copy cannot be undone.
		s, err = l.AbortMigration("m1")
		assert.ErrorIs(t, err, errConflict)
		assert.Equal(t, api.AbortFailed, s.Migration.AbortStatus)
		hv.mig.end <- nil
		s = waitMigration(t, l, func(s api.State) bool { return s.Migration.Completed })
		assert.Equal(t, api.MigrationPostCopy, s.Migration.Mode)
	})
}

func TestMigrateNeedsARunningGuest(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	_, err := l.Migrate(api.MigrateRequest{UID: "m1"})
	assert.ErrorIs(t, err, errConflict, "no guest")
	_, err = l.Migrate(api.MigrateRequest{})
	assert.ErrorIs(t, err, errInvalid)
}

func TestMigrationTarget(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Run(ctx, nil) }()

	_, err := l.PrepareTarget(context.Background(), api.MigrationTargetRequest{VMI: testVMI(), UID: ""})
	assert.ErrorIs(t, err, errInvalid)
	s, err := l.PrepareTarget(context.Background(), api.MigrationTargetRequest{VMI: testVMI(), UID: "m1"})
	require.NoError(t, err)
	assert.Equal(t, api.PhaseIncoming, s.Phase)
	assert.Equal(t, api.MigrationTarget, s.Migration.Role)
	assert.Equal(t, "ns_guest", s.Domain)
	assert.Empty(t, hv.Calls(), "a target defines nothing: the domain comes with the guest")
	assert.DirExists(t, l.Layout().MigrationDir)
	// Asked again: the same answer; a start is refused.
	_, err = l.PrepareTarget(context.Background(), api.MigrationTargetRequest{VMI: testVMI(), UID: "m1"})
	require.NoError(t, err)
	_, err = l.PrepareTarget(context.Background(), api.MigrationTargetRequest{VMI: testVMI(), UID: "m2"})
	assert.ErrorIs(t, err, errConflict)

	// libvirt defines the arriving domain (paused while memory arrives); QEMU's serial
	// socket is there, and the launcher attaches the console at once.
	serial, err := net.Listen("unix", l.Layout().SerialSocket)
	require.NoError(t, err)
	defer serial.Close()
	attached := make(chan struct{})
	go func() {
		if c, err := serial.Accept(); err == nil {
			close(attached)
			_, _ = c.Write([]byte("still counting\n"))
		}
	}()
	hv.mu.Lock()
	hv.defined = "<domain/>"
	hv.mu.Unlock()
	hv.setState(virt.StatePaused, "Migration")
	select {
	case <-attached:
	case <-time.After(5 * time.Second):
		t.Fatal("the console was not attached to the arriving guest")
	}
	assert.Equal(t, api.PhaseIncoming, l.State().Phase)

	hv.setState(virt.StateRunning, "")
	s = waitMigration(t, l, func(s api.State) bool { return s.Phase == api.PhaseRunning })
	assert.True(t, s.Migration.Completed)
	assert.NotNil(t, s.Migration.EndedAt)
}

func TestMigrationTargetFailsWhenTheDomainGoes(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Run(ctx, nil) }()
	vmi := testVMI()
	vmi.Spec.Domain.Devices.AutoattachSerialConsole = new(bool)
	_, err := l.PrepareTarget(context.Background(), api.MigrationTargetRequest{VMI: vmi, UID: "m1"})
	require.NoError(t, err)

	// Nothing arrived yet: events of nothing change nothing.
	hv.setState(virt.StateOther, "")
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, api.PhaseIncoming, l.State().Phase)

	hv.mu.Lock()
	hv.defined = "<domain/>"
	hv.mu.Unlock()
	hv.setState(virt.StatePaused, "Migration")
	time.Sleep(50 * time.Millisecond)
	hv.mu.Lock()
	hv.defined = "" // libvirt removed it: the migration failed
	hv.mu.Unlock()
	hv.setState(virt.StateShutoff, "")
	s := waitMigration(t, l, func(s api.State) bool { return s.Phase == api.PhaseFailed })
	assert.Equal(t, ReasonMigrationFailed, s.Reason)
	assert.True(t, s.Migration.Failed)
}

func TestShutdownOfAnIncomingTarget(t *testing.T) {
	l := newTestLauncher(t, newFake())
	_, err := l.PrepareTarget(context.Background(), api.MigrationTargetRequest{VMI: testVMI(), UID: "m1"})
	require.NoError(t, err)
	s, err := l.Shutdown(nil)
	require.NoError(t, err)
	assert.Equal(t, api.PhaseSucceeded, s.Phase)
}

// handlerDial dials the launcher's migration socket as virt-handler does.
func handlerDial(t *testing.T, l *Launcher, fields ...string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", l.MigrationSocketPath())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, tunnel.WriteLine(c, fields...))
	return c
}

func serveLauncher(t *testing.T, l *Launcher) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = l.Serve(ctx) }()
	require.Eventually(t, func() bool {
		c, err := net.Dial("unix", l.MigrationSocketPath())
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
}

func TestTunnelIntoTarget(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	// The target's libvirtd: an echo server.
	l.cfg.LibvirtSocket = filepath.Join(t.TempDir(), "libvirt-sock")
	ln, err := net.Listen("unix", l.cfg.LibvirtSocket)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	serveLauncher(t, l)

	// Not a target yet: refused.
	c := handlerDial(t, l, tunnel.VerbTarget, "libvirt")
	var remote *tunnel.RemoteError
	require.ErrorAs(t, tunnel.ReadAnswer(c), &remote)
	assert.Contains(t, remote.Message, "expects no migration")

	_, err = l.PrepareTarget(context.Background(), api.MigrationTargetRequest{VMI: testVMI(), UID: "m1"})
	require.NoError(t, err)
	c = handlerDial(t, l, tunnel.VerbTarget, "libvirt")
	require.NoError(t, tunnel.ReadAnswer(c))
	_, err = c.Write([]byte("hello libvirtd"))
	require.NoError(t, err)
	buf := make([]byte, 14)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	assert.Equal(t, "hello libvirtd", string(buf))

	// Unknown streams and verbs are refused.
	c = handlerDial(t, l, tunnel.VerbTarget, "../../etc/shadow")
	require.ErrorAs(t, tunnel.ReadAnswer(c), &remote)
	c = handlerDial(t, l, "exec", "sh")
	_, err = c.Read(buf)
	assert.ErrorIs(t, err, io.EOF, "closed")
	// The memory stream's socket is QEMU's; none listens: refused with the reason.
	c = handlerDial(t, l, tunnel.VerbTarget, "memory")
	require.ErrorAs(t, tunnel.ReadAnswer(c), &remote)
	assert.Contains(t, remote.Message, "connect memory")
}

func TestTunnelOutOfSource(t *testing.T) {
	hv, l := migratingFake(t)
	serveLauncher(t, l)
	_, err := l.Migrate(api.MigrateRequest{UID: "m1"})
	require.NoError(t, err)
	<-hv.mig.started

	// An upstream for another migration is dropped.
	wrong := handlerDial(t, l, tunnel.VerbSource, "m0")
	_, err = wrong.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF)

	up := handlerDial(t, l, tunnel.VerbSource, "m1")
	// QEMU connects to the memory socket: the upstream is told which stream it carries.
	qemu, err := net.Dial("unix", l.Layout().MigrationSocket("memory"))
	require.NoError(t, err)
	defer qemu.Close()
	verb, _, err := tunnel.ReadLine(up)
	require.NoError(t, err)
	assert.Equal(t, "memory", verb)
	_, err = qemu.Write([]byte("RAM"))
	require.NoError(t, err)
	buf := make([]byte, 3)
	_, err = io.ReadFull(up, buf)
	require.NoError(t, err)
	assert.Equal(t, "RAM", string(buf))
	_, err = up.Write([]byte("ack"))
	require.NoError(t, err)
	_, err = io.ReadFull(qemu, buf)
	require.NoError(t, err)
	assert.Equal(t, "ack", string(buf))
	hv.mig.end <- nil
}

func TestDisksToCopy(t *testing.T) {
	lay := domain.DefaultLayout("/run/x")
	file := func(dev, path string, ro bool) libvirtxml.DomainDisk {
		d := libvirtxml.DomainDisk{Device: "disk", Target: &libvirtxml.DomainDiskTarget{Dev: dev},
			Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: path}}}
		if ro {
			d.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
		}
		return d
	}
	cdrom := file("sda", lay.CloudInitISO("ci"), false)
	cdrom.Device = "cdrom"
	dom := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{Disks: []libvirtxml.DomainDisk{
		file("vda", lay.ContainerDiskOverlay("root"), false),
		file("vdb", lay.EmptyDisk("scratch"), false),
		file("vdc", lay.PVCFile("shared"), false),
		file("vdd", lay.ContainerDiskOverlay("ro"), true),
		cdrom,
		{Device: "disk", Target: &libvirtxml.DomainDiskTarget{Dev: "vde"}, Source: &libvirtxml.DomainDiskSource{Block: &libvirtxml.DomainDiskSourceBlock{Dev: "/dev/x"}}},
	}}}
	assert.Equal(t, []string{"vda", "vdb"}, disksToCopy(dom, lay))
}

func TestCompletionTimeout(t *testing.T) {
	for _, tc := range []struct {
		total uint64
		want  time.Duration
	}{
		{0, 150 * time.Second},
		{128 << 20, 150 * time.Second},
		{1 << 30, 150 * time.Second},
		{1<<30 + 1, 300 * time.Second},
		{5 << 30, 750 * time.Second},
	} {
		assert.Equal(t, tc.want, completionTimeout(150, tc.total), "total %d", tc.total)
	}
}

func TestIncomingState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ds      virt.DomainState
		err     error
		seen    bool
		phase   api.Phase
		arrived bool
	}{
		{"not yet", virt.DomainState{}, virt.ErrNoDomain, false, api.PhaseIncoming, false},
		{"gone after it came", virt.DomainState{}, virt.ErrNoDomain, true, api.PhaseFailed, false},
		{"arriving", virt.DomainState{State: virt.StatePaused, Reason: "Migration"}, nil, true, api.PhaseIncoming, false},
		{"arrived", virt.DomainState{State: virt.StateRunning}, nil, true, api.PhaseRunning, true},
		{"post-copy failed", virt.DomainState{State: virt.StatePaused, Reason: "PostCopyFailed"}, nil, true, api.PhaseFailed, false},
		{"stopped", virt.DomainState{State: virt.StateShutoff, Reason: "Failed"}, nil, true, api.PhaseFailed, false},
		{"libvirt hiccup", virt.DomainState{}, errors.New("timeout"), true, api.PhaseIncoming, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phase, _, arrived := incomingState(tc.ds, tc.err, tc.seen)
			assert.Equal(t, tc.phase, phase)
			assert.Equal(t, tc.arrived, arrived)
		})
	}
}
