//go:build bench

package bench

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/test/integration/framework"
	"github.com/hangarvm/hangar/test/procstat"
)

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
		st, err := procstat.Read(pid)
		require.NoError(t, err, name)
		out[name] = st.CPU
	}
	return out
}

// perObject is the CPU each process spent between before and after, divided by n.
func perObject(before, after map[string]time.Duration, n int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name := range after {
		out[name] = (after[name] - before[name]) / time.Duration(n)
	}
	return out
}
