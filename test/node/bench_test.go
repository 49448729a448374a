//go:build libvirt

package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// TestLauncherBootTimes measures HANGAR_BENCH_RUNS boots through virt-launcher (skipped
// without it): launcher start → command socket answering (libvirtd included), and Sync →
// the guest's banner (define, start paused, console attach, resume, boot). Compare with
// hack/guest/boot-bench.sh (bare QEMU).
func TestLauncherBootTimes(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("HANGAR_BENCH_RUNS"))
	if runs <= 0 {
		t.Skip("set HANGAR_BENCH_RUNS")
	}
	var ready, banner []time.Duration
	for i := range runs {
		t0 := time.Now()
		r := startLauncher(t, kernelBootVMI(fmt.Sprintf("bench%d", i)))
		ready = append(ready, time.Since(t0))
		r.sync()
		banner = append(banner, r.waitConsoleLog(banner0, 120*time.Second))
		// A clean stop, so the next libvirtd has no dead domain to reconnect to.
		zero := int64(0)
		_, err := r.client.Shutdown(context.Background(), &zero)
		require.NoError(t, err)
		r.waitPhase(api.PhaseSucceeded, 30*time.Second)
		r.waitExit(30 * time.Second)
	}
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		t.Logf("%s: n=%d median=%.2fs min=%.2fs max=%.2fs", name, len(d), d[len(d)/2].Seconds(), d[0].Seconds(), d[len(d)-1].Seconds())
		writeFigure(t, name+"-median", d[len(d)/2])
	}
	report("launcher-start-to-socket", ready)
	report("launcher-sync-to-banner", banner)
}

const banner0 = banner
