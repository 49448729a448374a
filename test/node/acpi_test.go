//go:build libvirt

package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// powerdownMarker is what the test guest prints when its ACPI power button is pressed,
// right before it powers itself off (hack/guest/initramfs/powerbutton).
const powerdownMarker = "HANGAR-GUEST-POWERDOWN"

// phaseLog follows a launcher's events and keeps every phase it reports, so a test can tell
// that a phase was never passed through (events may come faster than a poll of the state).
type phaseLog struct {
	mu     sync.Mutex
	phases []api.Phase
	cancel context.CancelFunc
	done   chan struct{}
}

func followPhases(r *launcherRun) *phaseLog {
	ctx, cancel := context.WithCancel(context.Background())
	p := &phaseLog{cancel: cancel, done: make(chan struct{})}
	after := r.State().Seq
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			ev, err := r.client.Events(ctx, after, 500*time.Millisecond)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			p.mu.Lock()
			for _, e := range ev.Events {
				p.phases = append(p.phases, e.State.Phase)
			}
			p.mu.Unlock()
			after = ev.State.Seq
		}
	}()
	return p
}

// stop ends the following (once; later calls return the same) and returns the phases seen.
func (p *phaseLog) stop() []api.Phase {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]api.Phase(nil), p.phases...)
}

func (r *launcherRun) consoleLog() string {
	b, _ := os.ReadFile(filepath.Join(r.runDir, "console.log"))
	return string(b)
}

func (r *launcherRun) launcherLog() string {
	b, _ := os.ReadFile(filepath.Join(testEnv(r.t).outDir, r.vmi.Name+".launcher.log"))
	return string(b)
}

// TestLauncherStopsGuestGracefullyOrAfterGrace: a stop request presses the ACPI power button.
// A guest that honours it powers off long before its grace period ends (the launcher's
// SIGTERM, as the kubelet sends it, and the handler's Shutdown call alike); one that ignores
// it is destroyed when the grace period ends.
func TestLauncherStopsGuestGracefullyOrAfterGrace(t *testing.T) {
	tests := []struct {
		name       string
		kernelArgs string // appended to the guest's command line
		grace      int64
		stop       func(t *testing.T, r *launcherRun)
		wantReason string
		wantMarker bool
		min, max   time.Duration // from the request to Succeeded
	}{
		{
			name:  "sigterm-acpi",
			grace: 60,
			stop: func(t *testing.T, r *launcherRun) {
				require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
			},
			wantReason: "GuestShutdown", wantMarker: true, max: 15 * time.Second,
		},
		{
			name:  "shutdown-call-acpi",
			grace: 60,
			stop: func(t *testing.T, r *launcherRun) {
				s, err := r.client.Shutdown(context.Background(), nil)
				require.NoError(t, err)
				assert.Contains(t, []api.Phase{api.PhaseShuttingDown, api.PhaseSucceeded}, s.Phase)
			},
			wantReason: "GuestShutdown", wantMarker: true, max: 15 * time.Second,
		},
		{
			name:       "sigterm-deaf",
			kernelArgs: "hangar.powerbutton=ignore",
			grace:      2,
			stop: func(t *testing.T, r *launcherRun) {
				require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
			},
			wantReason: "Stopped", min: 2 * time.Second, max: 10 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startLauncher(t, kernelBootVMI(tt.name, func(v *v1.VirtualMachineInstance) {
				v.Spec.TerminationGracePeriodSeconds = ptr.To(tt.grace)
				if tt.kernelArgs != "" {
					v.Spec.Domain.Firmware.KernelBoot.KernelArgs += " " + tt.kernelArgs
				}
			}))
			r.sync()
			r.waitConsoleLog(banner+" hostname="+tt.name, 120*time.Second)

			phases := followPhases(r)
			t0 := time.Now()
			tt.stop(t, r)
			s := r.waitPhase(api.PhaseSucceeded, tt.max+5*time.Second)
			took := time.Since(t0)
			t.Logf("stop request -> %s/%s: %s, phases %v", s.Phase, s.Reason, took, phases.stop())
			assert.NotContains(t, phases.stop(), api.PhasePaused)
			assert.Equal(t, tt.wantReason, s.Reason)
			assert.GreaterOrEqual(t, took, tt.min)
			assert.Less(t, took, tt.max)
			r.waitExit(20 * time.Second)

			console, launcherLog := r.consoleLog(), r.launcherLog()
			if tt.wantMarker {
				assert.Contains(t, console, powerdownMarker, "the guest's own shutdown")
				assert.NotContains(t, launcherLog, "destroying", "a guest that shut down must not be destroyed")
				writeFigure(t, "launcher-acpi-stop-to-succeeded", took)
			} else {
				assert.NotContains(t, console, powerdownMarker)
				assert.Contains(t, launcherLog, "grace period over; destroying the guest")
			}
		})
	}
}

// TestLauncherSoftRebootRebootsGuestInPlace: softreboot is libvirt's ACPI reboot: the guest
// gets the power button, powers off, and libvirt resets it instead of ending QEMU. The guest
// boots again (a second banner) in the same QEMU, and the launcher never reports it paused,
// stopped or gone on the way.
func TestLauncherSoftRebootRebootsGuestInPlace(t *testing.T) {
	const name = "softreboot"
	r := startLauncher(t, kernelBootVMI(name))
	r.sync()
	r.waitConsoleLog(banner+" hostname="+name, 120*time.Second)
	qemu := r.qemuPid()

	phases := followPhases(r)
	t0 := time.Now()
	s, err := r.client.SoftReboot(context.Background())
	require.NoError(t, err)
	assert.Equal(t, api.PhaseRunning, s.Phase)
	require.Eventually(t, func() bool {
		c := r.consoleLog()
		i := strings.Index(c, powerdownMarker)
		return i >= 0 && strings.Contains(c[i:], banner+" hostname="+name)
	}, 120*time.Second, 50*time.Millisecond, "no power-down marker followed by a second banner")
	t.Logf("softreboot -> banner again: %s", time.Since(t0))
	writeFigure(t, "launcher-softreboot-to-banner", time.Since(t0))
	time.Sleep(time.Second) // events that trail the reset
	seen := phases.stop()
	t.Logf("phases during the reboot: %v", seen)

	assert.Equal(t, api.PhaseRunning, r.State().Phase)
	assert.Equal(t, qemu, r.qemuPid(), "the same QEMU: rebooted, not restarted")
	for _, p := range seen {
		assert.NotContains(t, []api.Phase{api.PhasePaused, api.PhaseSucceeded, api.PhaseFailed}, p,
			"a soft reboot passes through %s", p)
	}
	// The shell is back and answers (retyped: a starting shell may drop early input).
	c := r.console()
	var out strings.Builder
	buf := make([]byte, 4096)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "hangar-58"); {
		r.typeLine(c, "echo hangar-$((50+8))")
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Second)))
		n, _ := c.Read(buf)
		out.Write(buf[:n])
		require.True(t, time.Now().Before(deadline), "no shell after the reboot: %q", out.String())
	}

	// And the rebooted guest still honours a stop.
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	s = r.waitPhase(api.PhaseSucceeded, 30*time.Second)
	assert.Equal(t, "GuestShutdown", s.Reason)
	assert.Equal(t, 2, strings.Count(r.consoleLog(), powerdownMarker))
	r.waitExit(20 * time.Second)
}

// TestContainerDiskHonoursPowerButton: the Debian containerDisk powers off through
// systemd-logind when the launcher presses the power button on SIGTERM, long before its
// grace period ends.
func TestContainerDiskHonoursPowerButton(t *testing.T) {
	vmi, diskRoot := debianGuestVMI(t, "debian-acpi", func(v *v1.VirtualMachineInstance) {
		v.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	})
	r := startLauncher(t, vmi, "--container-disk-root", diskRoot)
	r.sync()
	r.waitConsoleLog(banner, 240*time.Second)
	// The autologin shell: its login went through logind, so logind watches the button.
	r.waitConsoleLog("root@", 120*time.Second)

	t0 := time.Now()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	s := r.waitPhase(api.PhaseSucceeded, 65*time.Second)
	took := time.Since(t0)
	t.Logf("SIGTERM -> %s/%s: %s", s.Phase, s.Reason, took)
	assert.Equal(t, "GuestShutdown", s.Reason)
	assert.Less(t, took, 30*time.Second)
	assert.Contains(t, r.consoleLog(), "reboot: Power down", "the guest's kernel powered it off")
	assert.NotContains(t, r.launcherLog(), "destroying")
	r.waitExit(20 * time.Second)
}
