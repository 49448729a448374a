//go:build libvirt && bench

package node

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

var counterLine = regexp.MustCompile(`c-(\d+)`)

// counterWatch follows the guest's counter on a launcher's console, then on the next one's
// once the first ends: when each value was seen, by wall clock.
type counterWatch struct {
	mu   sync.Mutex
	seen []struct {
		n  int
		at time.Time
	}
}

func (w *counterWatch) follow(dir *podsockets.Dir) error {
	c, err := dir.Dial(api.ConsoleSocketName)
	if err != nil {
		return err
	}
	defer c.Close()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if m := counterLine.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[1])
			w.mu.Lock()
			w.seen = append(w.seen, struct {
				n  int
				at time.Time
			}{n, time.Now()})
			w.mu.Unlock()
		}
	}
	return nil
}

// followAcross reads from's console until it ends, then to's (as soon as it answers).
func (w *counterWatch) followAcross(from, to *podsockets.Dir) {
	_ = w.follow(from)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if w.follow(to) == nil {
			return
		}
	}
}

// gap is the longest wall-clock gap between two consecutive counter values seen, and
// whether the counter went on (never restarted).
func (w *counterWatch) gap() (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	for i := 1; i < len(w.seen); i++ {
		if w.seen[i].n < w.seen[i-1].n {
			return longest, false
		}
		longest = max(longest, w.seen[i].at.Sub(w.seen[i-1].at))
	}
	return longest, true
}

// startCounter starts the counter once: a starting shell may drop what is typed, so it is
// typed again until the counter shows, never twice.
func startCounter(t *testing.T, r *launcherRun) {
	c, err := r.dir.Dial(api.ConsoleSocketName)
	require.NoError(t, err)
	defer c.Close()
	for range 10 {
		_, err = c.Write([]byte("i=0; while :; do echo c-$i; i=$((i+1)); usleep 20000; done &\r"))
		require.NoError(t, err)
		time.Sleep(time.Second)
		if b, _ := os.ReadFile(filepath.Join(r.runDir, "console.log")); counterLine.Match(b) {
			return
		}
	}
	t.Fatal("the counter did not start")
}

// TestBenchLiveMigration prints, for a 128 MiB and a 1 GiB guest under TCG, the migration
// time and the gap in a 20 ms console counter: Hangar's migration (launcher to launcher
// through the migration sockets) and, in the same run, `virsh migrate --live --p2p` between
// two libvirtds of the same kind, and the ratio. Run by hack/bench/migration.sh.
func TestBenchLiveMigration(t *testing.T) {
	n := testNode(t)
	bench := filepath.Join(n.base, "b")
	require.NoError(t, os.MkdirAll(bench, 0o755))
	require.NoError(t, os.Chown(bench, layout.LauncherUID, layout.LauncherUID))
	for _, size := range []string{"128Mi", "1Gi"} {
		t.Run(size, func(t *testing.T) {
			vmi := kernelBootVMI("bench-"+map[string]string{"128Mi": "small", "1Gi": "large"}[size], func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(size)}
			})
			a := startLauncherWith(t, launcherOptions{sharedRunPath: true}, vmi)
			require.Equal(t, api.PhaseRunning, a.sync().Phase)
			a.waitConsoleLog(banner, 90*time.Second)
			startCounter(t, a)

			// Hangar: a to b through the migration sockets.
			b := startLauncherWith(t, launcherOptions{sharedRunPath: true}, vmi)
			_, err := b.client.PrepareMigrationTarget(context.Background(), api.MigrationTargetRequest{VMI: vmi, UID: "m-hangar"})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			carryStreams(ctx, t, a.dir, b.dir, "m-hangar")
			var hangarWatch counterWatch
			go hangarWatch.followAcross(a.dir, b.dir)
			time.Sleep(time.Second)
			start := time.Now()
			_, err = a.client.Migrate(context.Background(), api.MigrateRequest{UID: "m-hangar",
				Options: api.MigrationOptions{ProgressTimeoutSeconds: 150, CompletionTimeoutPerGiBSeconds: 600}})
			require.NoError(t, err)
			// Until the source reports the end, as virsh returns at the end.
			var m *api.Migration
			require.Eventually(t, func() bool {
				m = a.State().Migration
				return m != nil && m.EndedAt != nil
			}, 5*time.Minute, 20*time.Millisecond)
			hangarTime := time.Since(start)
			require.True(t, m.Completed, "%+v", m)
			require.Eventually(t, func() bool { return b.State().Phase == api.PhaseRunning }, time.Minute, 20*time.Millisecond)
			time.Sleep(2 * time.Second)
			hangarGap, on := hangarWatch.gap()
			require.True(t, on, "the counter went on")
			domain := vmi.Namespace + "_" + vmi.Name
			// Before the guest moves on from b.
			hangarDown := completedDowntime(t, b.stateDir, domain)

			// Baseline: virsh migrate --live --p2p from b's libvirtd to c's.
			c := startLauncherWith(t, launcherOptions{sharedRunPath: true}, vmi)
			_, err = c.client.PrepareMigrationTarget(context.Background(), api.MigrationTargetRequest{VMI: vmi, UID: "m-virsh"})
			require.NoError(t, err)
			var virshWatch counterWatch
			go virshWatch.followAcross(b.dir, c.dir)
			time.Sleep(time.Second)
			virsh := launcherVirsh(b.stateDir,
				"migrate", "--live", "--p2p", domain, "qemu+unix:///session?socket="+libvirtd.Socket(c.stateDir),
				"--migrateuri", "unix://"+filepath.Join(bench, "mem.sock"))
			start = time.Now()
			out, err := virsh.CombinedOutput()
			virshTime := time.Since(start)
			require.NoError(t, err, "virsh: %s", out)
			require.Eventually(t, func() bool { return c.State().Phase == api.PhaseRunning }, time.Minute, 20*time.Millisecond)
			time.Sleep(2 * time.Second)
			virshGap, on := virshWatch.gap()
			require.True(t, on, "the counter went on")

			virshDown := completedDowntime(t, c.stateDir, domain)
			fmt.Printf("bench-migration: %s guest (TCG): hangar %.2f s, console gap %d ms; virsh migrate --live --p2p %.2f s, console gap %d ms; time ratio %.2f\n",
				size, hangarTime.Seconds(), hangarGap.Milliseconds(), virshTime.Seconds(), virshGap.Milliseconds(), hangarTime.Seconds()/virshTime.Seconds())
			fmt.Printf("bench-migration: %s guest (TCG): downtime as libvirt reports it: hangar %d ms, virsh %d ms, ratio %.2f (target <= 1.1)\n",
				size, hangarDown, virshDown, float64(hangarDown)/float64(virshDown))
			writeFigure(t, "live migration "+size+" hangar", hangarTime)
			writeFigure(t, "live migration "+size+" virsh p2p", virshTime)
		})
	}
}

// completedDowntime is the guest's downtime in the migration that ended on the libvirtd of
// stateDir, in ms, as libvirt measured it: the "Total downtime" of the destination's completed
// job statistics (virsh domjobinfo --completed; the source forgets the domain once it left).
func completedDowntime(t *testing.T, stateDir, domain string) int64 {
	t.Helper()
	out, err := launcherVirsh(stateDir, "domjobinfo", "--completed", domain).CombinedOutput()
	require.NoError(t, err, "virsh domjobinfo: %s", out)
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Total downtime:"); ok {
			ms, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "ms")), 10, 64)
			require.NoError(t, err, "%q", line)
			return ms
		}
	}
	require.Fail(t, "no downtime in the completed job", "%s", out)
	return 0
}

// launcherVirsh is virsh, as the launcher's user, against the session libvirtd of stateDir.
func launcherVirsh(stateDir string, args ...string) *exec.Cmd {
	return exec.Command("setpriv", append([]string{fmt.Sprintf("--reuid=%d", layout.LauncherUID), fmt.Sprintf("--regid=%d", layout.LauncherUID), "--clear-groups",
		"virsh", "-c", "qemu+unix:///session?socket=" + libvirtd.Socket(stateDir)}, args...)...)
}
