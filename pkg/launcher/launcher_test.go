package launcher

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
)

// fakeHypervisor records calls and plays QEMU's part of the serial console: StartPaused
// listens on the domain's serial socket.
type fakeHypervisor struct {
	mu         sync.Mutex
	calls      []string
	state      virt.DomainState
	defined    string
	serial     string
	serialLn   net.Listener
	attached   chan struct{}
	failOn     string
	events     chan virt.Event
	closed     chan struct{}
	stats      virt.DomainStats
	statsErr   error
	statsBlock chan struct{} // Stats waits for it to close
	statsCalls int
	mig        fakeMigration
	devices    []string // the XML of AttachDevice calls
	fdSets     []fdSet  // what AddFDSet was given
	detached   []string // the XML of DetachDevice calls
	dumps      []string // the paths of MemoryDump calls
}

func newFake() *fakeHypervisor {
	return &fakeHypervisor{events: make(chan virt.Event, 16), closed: make(chan struct{}), attached: make(chan struct{})}
}

func (f *fakeHypervisor) call(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	if f.failOn == name {
		return assert.AnError
	}
	return nil
}

func (f *fakeHypervisor) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeHypervisor) setState(s virt.State, reason string) {
	f.mu.Lock()
	f.state = virt.DomainState{State: s, Reason: reason}
	f.mu.Unlock()
	f.events <- virt.Event{Domain: "ns_guest", Kind: virt.EventOther}
}

func (f *fakeHypervisor) Define(xml string) error {
	f.mu.Lock()
	f.defined = xml
	f.mu.Unlock()
	if i := strings.Index(xml, `<serial type="unix">`); i >= 0 {
		rest := xml[i:]
		p := rest[strings.Index(rest, `path="`)+6:]
		f.serial = p[:strings.Index(p, `"`)]
	}
	return f.call("Define")
}

func (f *fakeHypervisor) StartPaused(string) error {
	if err := f.call("StartPaused"); err != nil {
		return err
	}
	if f.serial != "" {
		ln, err := net.Listen("unix", f.serial)
		if err != nil {
			return err
		}
		f.serialLn = ln
		go func() {
			if c, err := ln.Accept(); err == nil {
				close(f.attached)
				_, _ = c.Write([]byte("HANGAR-GUEST-READY\n"))
			}
		}()
	}
	f.mu.Lock()
	f.state = virt.DomainState{State: virt.StatePaused}
	f.mu.Unlock()
	return nil
}

func (f *fakeHypervisor) Resume(string) error {
	if f.serial != "" {
		// The launcher has connected before it resumes; the fake's accept may lag a moment.
		select {
		case <-f.attached:
		case <-time.After(2 * time.Second):
			return f.call("Resume-before-console")
		}
	}
	f.mu.Lock()
	f.state = virt.DomainState{State: virt.StateRunning}
	f.mu.Unlock()
	return f.call("Resume")
}
func (f *fakeHypervisor) Suspend(string) error {
	f.mu.Lock()
	f.state = virt.DomainState{State: virt.StatePaused}
	f.mu.Unlock()
	return f.call("Suspend")
}
func (f *fakeHypervisor) Reboot(string) error   { return f.call("Reboot") }
func (f *fakeHypervisor) Reset(string) error    { return f.call("Reset") }
func (f *fakeHypervisor) Shutdown(string) error { return f.call("Shutdown") }
func (f *fakeHypervisor) AttachDevice(_, xml string) error {
	f.mu.Lock()
	f.devices = append(f.devices, xml)
	f.mu.Unlock()
	return f.call("AttachDevice")
}
func (f *fakeHypervisor) AddFDSet(_ string, id int, files []*os.File) error {
	set := fdSet{id: id}
	for _, file := range files {
		flags, err := unix.FcntlInt(file.Fd(), unix.F_GETFL, 0)
		if err != nil {
			return err
		}
		target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(file.Fd())))
		if err != nil {
			return err
		}
		mode := map[int]string{unix.O_RDONLY: "read-only", unix.O_RDWR: "read-write"}[flags&unix.O_ACCMODE]
		set.files = append(set.files, target+" "+mode)
	}
	f.mu.Lock()
	f.fdSets = append(f.fdSets, set)
	f.mu.Unlock()
	return f.call("AddFDSet")
}

func (f *fakeHypervisor) RemoveFDSet(string, int) error { return f.call("RemoveFDSet") }

func (f *fakeHypervisor) DetachDevice(_, xml string) error {
	f.mu.Lock()
	f.detached = append(f.detached, xml)
	f.mu.Unlock()
	return f.call("DetachDevice")
}
func (f *fakeHypervisor) MemoryDump(_, path string) error {
	f.mu.Lock()
	f.dumps = append(f.dumps, path)
	f.mu.Unlock()
	return f.call("MemoryDump")
}
func (f *fakeHypervisor) Destroy(string) error  { return f.call("Destroy") }
func (f *fakeHypervisor) Undefine(string) error { return f.call("Undefine") }
func (f *fakeHypervisor) State(string) (virt.DomainState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.defined == "" {
		return f.state, virt.ErrNoDomain
	}
	return f.state, nil
}
func (f *fakeHypervisor) Stats(string) (virt.DomainStats, error) {
	f.mu.Lock()
	f.statsCalls++
	block := f.statsBlock
	f.mu.Unlock()
	if block != nil {
		<-block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats, f.statsErr
}
func (f *fakeHypervisor) Events() <-chan virt.Event { return f.events }
func (f *fakeHypervisor) Closed() <-chan struct{}   { return f.closed }
func (f *fakeHypervisor) Close() error              { return nil }

func testVMI() *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guest", UID: "uid-1"},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
			Devices:   v1.Devices{AutoattachPodInterface: ptr.To(false)},
		}},
	}
	v1.DefaultVirtualMachineInstanceSpec(&vmi.Spec)
	return vmi
}

// fdSet is an fd set the launcher gave QEMU: its files by path and access mode.
type fdSet struct {
	id    int
	files []string
}

func newTestLauncher(t *testing.T, hv virt.Hypervisor) *Launcher {
	dir := t.TempDir()
	l := New(Config{Namespace: "ns", Name: "guest", UID: "uid-1", SocketDir: filepath.Join(dir, "s"), RunDir: filepath.Join(dir, "r"),
		FDSetDir: filepath.Join(dir, "fdset"), UseEmulation: true, FinalWait: time.Second}, hv)
	require.NoError(t, mkdirs(l.cfg.SocketDir, l.cfg.RunDir, l.cfg.FDSetDir))
	t.Cleanup(l.Close)
	return l
}

func TestSyncStartsPausedAttachesConsoleThenResumes(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	s, err := l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	assert.Equal(t, api.PhaseRunning, s.Phase)
	assert.Equal(t, "ns_guest", s.Domain)
	assert.Equal(t, []string{"Define", "StartPaused", "Resume"}, hv.Calls())
	assert.Contains(t, hv.defined, `<domain type="qemu">`)

	// Idempotent.
	_, err = l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	assert.Len(t, hv.Calls(), 3)

	// The relay passes on what the guest printed after a client connected: the banner went to
	// the log only, since nobody was connected yet.
	assert.Eventually(t, func() bool {
		b, _ := readFile(filepath.Join(l.cfg.RunDir, "console.log"))
		return strings.Contains(b, "HANGAR-GUEST-READY")
	}, 5*time.Second, 10*time.Millisecond)
}

func TestSyncRefusesAnotherInstance(t *testing.T) {
	l := newTestLauncher(t, newFake())
	vmi := testVMI()
	vmi.UID = "other"
	_, err := l.Sync(context.Background(), api.SyncRequest{VMI: vmi})
	assert.ErrorIs(t, err, errConflict)
}

func TestSyncFailureIsFinal(t *testing.T) {
	hv := newFake()
	hv.failOn = "StartPaused"
	l := newTestLauncher(t, hv)
	s, err := l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.Error(t, err)
	assert.Equal(t, api.PhaseFailed, s.Phase)
	assert.Equal(t, ReasonDomainStartFailed, s.Reason)
	assert.Contains(t, s.Message, "start domain ns_guest")
}

func TestEventsFollowLibvirtAndRunExits(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	_, err := l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	runDone := make(chan error, 1)
	go func() { runDone <- l.Run(context.Background(), nil) }()

	_, err = l.Reset()
	require.NoError(t, err)
	assert.Equal(t, 1, countOf(hv.Calls(), "Reset"))

	seq := l.State().Seq
	_, err = l.Pause()
	require.NoError(t, err)
	ev := l.Events(context.Background(), seq, time.Second)
	require.NotEmpty(t, ev.Events)
	assert.Equal(t, api.PhasePaused, ev.State.Phase)

	_, err = l.SoftReboot()
	assert.ErrorIs(t, err, errConflict, "no reboot while paused")
	_, err = l.Reset()
	assert.ErrorIs(t, err, errConflict, "no reset while paused")
	assert.Equal(t, 1, countOf(hv.Calls(), "Reset"), "only the reset while running reached libvirt")

	// A long poll with nothing new returns the current state after its wait.
	t0 := time.Now()
	ev = l.Events(context.Background(), ev.State.Seq, 100*time.Millisecond)
	assert.Empty(t, ev.Events)
	assert.GreaterOrEqual(t, time.Since(t0), 100*time.Millisecond)

	hv.setState(virt.StateShutoff, "Crashed")
	assert.Eventually(t, func() bool { return l.State().Phase == api.PhaseFailed }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "QEMUCrashed", l.State().Reason)
	select {
	case err := <-runDone:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the final state was read")
	}
}

func TestShutdownDestroysAfterGrace(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	_, err := l.Sync(context.Background(), api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	grace := 50 * time.Millisecond
	s, err := l.Shutdown(&grace)
	require.NoError(t, err)
	assert.Equal(t, api.PhaseShuttingDown, s.Phase)
	assert.Eventually(t, func() bool {
		c := hv.Calls()
		return len(c) >= 5 && c[3] == "Shutdown" && c[4] == "Destroy"
	}, 2*time.Second, 10*time.Millisecond, "calls: %v", hv.Calls())
	// libvirt reports the destroyed domain; a requested stop is a success.
	hv.setState(virt.StateShutoff, "Destroyed")
	<-hv.events
	l.refresh()
	assert.Equal(t, api.PhaseSucceeded, l.State().Phase)
	assert.Equal(t, "Stopped", l.State().Reason)
}

func TestShutdownBeforeStart(t *testing.T) {
	l := newTestLauncher(t, newFake())
	s, err := l.Shutdown(nil)
	require.NoError(t, err)
	assert.Equal(t, api.PhaseSucceeded, s.Phase)
}

func TestPhaseOf(t *testing.T) {
	tests := []struct {
		ds        virt.DomainState
		stopAsked bool
		phase     api.Phase
		reason    string
	}{
		{virt.DomainState{State: virt.StateRunning}, false, api.PhaseRunning, ""},
		{virt.DomainState{State: virt.StateRunning}, true, api.PhaseShuttingDown, ""},
		{virt.DomainState{State: virt.StatePaused}, false, api.PhasePaused, "PausedByUser"},
		{virt.DomainState{State: virt.StateShutoff, Reason: "Shutdown"}, false, api.PhaseSucceeded, "GuestShutdown"},
		{virt.DomainState{State: virt.StateShutoff, Reason: "Destroyed"}, false, api.PhaseFailed, "Destroyed"},
		{virt.DomainState{State: virt.StateShutoff, Reason: "Destroyed"}, true, api.PhaseSucceeded, "Stopped"},
		{virt.DomainState{State: virt.StateShutoff, Reason: "Crashed"}, false, api.PhaseFailed, "QEMUCrashed"},
		{virt.DomainState{State: virt.StateShutoff, Reason: "Failed"}, false, api.PhaseFailed, "QEMUFailed"},
		{virt.DomainState{State: virt.StateCrashed}, false, api.PhaseFailed, "GuestCrashed"},
	}
	for _, tt := range tests {
		phase, reason := phaseOf(tt.ds, tt.stopAsked)
		assert.Equal(t, tt.phase, phase, "%+v", tt)
		assert.Equal(t, tt.reason, reason, "%+v", tt)
	}
}

func TestHTTPProtocol(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	srv := httptest.NewServer(l.Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + api.PathHealthz)
	require.NoError(t, err)
	var h api.Health
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	resp.Body.Close()
	assert.Equal(t, api.Health{Version: "v1", UID: "uid-1"}, h)

	resp, err = http.Post(srv.URL+api.PathPause, "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode, "nothing to pause yet")

	resp, err = http.Get(srv.URL + api.PathEvents + "?after=x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestClientOverUnixSocket(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()
	c := api.NewClient(l.SocketPath())
	defer c.Close()
	require.Eventually(t, func() bool { _, err := c.Healthz(ctx); return err == nil }, 5*time.Second, 10*time.Millisecond)

	s, err := c.Sync(ctx, api.SyncRequest{VMI: testVMI()})
	require.NoError(t, err)
	assert.Equal(t, api.PhaseRunning, s.Phase)
	_, err = c.Pause(ctx)
	require.NoError(t, err)
	ev, err := c.Events(ctx, s.Seq, time.Second)
	require.NoError(t, err)
	assert.Equal(t, api.PhasePaused, ev.State.Phase)
	_, err = c.SoftReboot(ctx)
	var callErr *api.CallError
	require.ErrorAs(t, err, &callErr)
	assert.Equal(t, http.StatusConflict, callErr.Status)

	cancel()
	require.NoError(t, <-served)
}

func TestSyncWithStartStrategyPausedStaysPaused(t *testing.T) {
	hv := newFake()
	l := newTestLauncher(t, hv)
	vmi := testVMI()
	vmi.Spec.StartStrategy = ptr.To(v1.StartStrategyPaused)
	s, err := l.Sync(context.Background(), api.SyncRequest{VMI: vmi})
	require.NoError(t, err)
	assert.Equal(t, api.PhasePaused, s.Phase)
	assert.Equal(t, []string{"Define", "StartPaused"}, hv.Calls(), "no resume: the user unpauses")
}

func countOf(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}
