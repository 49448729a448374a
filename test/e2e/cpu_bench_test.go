//go:build e2e && bench

package e2e

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hangarvm/hangar/test/procstat"
)

// The host's CPU time by process during a burst, read from /proc: the benchmark runs on the
// node, so it sees the guests, Hangar's components, Kubernetes' and the runtime's. A
// process's figure includes the children it reaped: runc under containerd-shim, the CNI
// plugins under containerd, nft under virt-handler.

type procCPU struct {
	name  string // comm, or "hangar-etcd" for the etcd in a pod
	start uint64 // start time, to tell a reused PID
	cpu   time.Duration
}

type cpuSample struct {
	at    time.Time
	busy  time.Duration // the host's busy time, all CPUs (/proc/stat)
	procs map[int]procCPU
}

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now(), procs: map[int]procCPU{}}
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(data), "\n")
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseInt(f, 10, 64)
			if i != 3 && i != 4 { // idle, iowait
				s.busy += time.Duration(v) * procstat.ClockTick
			}
		}
	}
	all, _ := procstat.All()
	for pid, st := range all {
		p := procCPU{name: st.Comm, start: st.StartTicks, cpu: st.CPU + st.ChildrenCPU}
		if p.name == "etcd" && inPod(pid) {
			p.name = "hangar-etcd"
		}
		s.procs[pid] = p
	}
	return s
}

func inPod(pid int) bool {
	cgroup, err := procstat.Cgroup(pid)
	return err == nil && strings.Contains(cgroup, "kubepods")
}

// cpuGroups sorts processes by who runs them; what no group names is "other" (the kernel's
// workers, the machine's own agents).
var cpuGroups = []struct {
	group string
	names []string
}{
	{"guests (QEMU)", []string{"qemu-system-x86"}},
	{"Hangar", []string{"virt-launcher", "libvirtd", "virt-handler", "virt-api", "virt-controller", "hangar-etcd"}},
	{"Kubernetes and runtime", []string{"containerd-shim", "containerd", "pause", "kubelet", "kube-apiserver",
		"etcd", "kube-controller", "kube-scheduler", "kube-proxy", "coredns", "local-path-prov"}},
	{"the benchmark", []string{"e2e.test"}},
}

// printCPU prints the host's CPU time between two samples by group and, within the groups,
// by process name, each also per guest.
func printCPU(title string, before, after cpuSample, guests int) {
	used := map[string]float64{}
	for pid, p := range after.procs {
		cpu := p.cpu
		if b, ok := before.procs[pid]; ok && b.start == p.start {
			cpu -= b.cpu
		}
		used[p.name] += cpu.Seconds()
	}
	wall := after.at.Sub(before.at).Seconds()
	busy := (after.busy - before.busy).Seconds()
	fmt.Printf("%s: %.1f s busy of %.1f s (%d CPUs for %.1f s)\n", title, busy, wall*float64(runtime.NumCPU()), runtime.NumCPU(), wall)
	named := 0.0
	for _, g := range cpuGroups {
		total := 0.0
		var parts []string
		sorted := append([]string(nil), g.names...)
		sort.SliceStable(sorted, func(i, j int) bool { return used[sorted[i]] > used[sorted[j]] })
		for _, name := range sorted {
			total += used[name]
			if used[name] >= 0.05 && len(g.names) > 1 {
				parts = append(parts, fmt.Sprintf("%s %.1f", name, used[name]))
			}
		}
		named += total
		line := fmt.Sprintf("  %-24s %7.1f s  %5.2f s per guest", g.group, total, total/float64(guests))
		if len(parts) > 0 {
			line += "  (" + strings.Join(parts, ", ") + ")"
		}
		fmt.Println(line)
	}
	fmt.Printf("  %-24s %7.1f s\n", "other", busy-named)
}
