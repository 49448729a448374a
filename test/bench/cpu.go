//go:build bench

package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/test/integration/framework"
)

// clockTick is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on every Linux
// architecture Hangar runs on.
const clockTick = 10 * time.Millisecond

// cpuMeter reads the CPU time (user + system) the benchmark's processes spent: virt-api,
// kube-apiserver, and the test process, which holds the clients and both etcds. Where a
// row's CPU goes tells which server to make cheaper.
type cpuMeter struct {
	pids map[string]int
}

// cpuProcesses are the meter's processes in the order they are printed.
var cpuProcesses = []string{"kube-apiserver", "virt-api", "clients+etcd"}

func newCPUMeter(c *framework.Cluster) *cpuMeter {
	return &cpuMeter{pids: map[string]int{
		"kube-apiserver": c.KubeAPIServer.Pid(),
		"virt-api":       c.VirtAPI.Pid(),
		"clients+etcd":   os.Getpid(),
	}}
}

// read returns each process's CPU time so far.
func (m *cpuMeter) read(t testing.TB) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, pid := range m.pids {
		d, err := processCPU(pid)
		require.NoError(t, err, name)
		out[name] = d
	}
	return out
}

// processCPU is utime + stime of a process (its threads included) from /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis
	// start at field 3 (state), which puts utime (14) and stime (15) at indexes 11 and 12.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(fields))
	}
	var total time.Duration
	for _, f := range fields[11:13] {
		ticks, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		total += time.Duration(ticks) * clockTick
	}
	return total, nil
}

// perObject is the CPU each process spent between before and after, divided by n.
func perObject(before, after map[string]time.Duration, n int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name := range after {
		out[name] = (after[name] - before[name]) / time.Duration(n)
	}
	return out
}
