//go:build e2e && bench

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestMetricsFigures prints, with 1, 10 and BENCH_METRICS_VMS (30) instances running on one
// node, what a scrape of virt-handler's /metrics costs: the scrape's wall time (median, p95)
// and the handler's CPU per scrape (its process_cpu_seconds_total over the scrapes, less what
// it spent idle over as long). Scrapes are spaced past the collector's reuse interval (1 s),
// so that every one asks every launcher. At each step it also prints virt-handler's memory
// (resident and Go heap) and the host memory of each guest's pod beside its QEMU
// (podMemory), and at the end the handler's memory per instance against its target.
// hack/bench/metrics.sh runs it. A benchmark: it fails only on errors.
func TestMetricsFigures(t *testing.T) {
	ns := namespace(t, "bench-metrics")
	waitForDefaultServiceAccount(t, ns)
	token := serviceAccountToken(t, ns, "prometheus", true)
	handler := componentPods(t, "virt-handler")[0]
	scrapes := benchEnv("BENCH_SCRAPES", 30)

	// Every guest on the handler's node; 25m of CPU each, so that 30 launcher pods (with their
	// console-log sidecars) fit the requests of a two-core node beside Hangar.
	spec := guestSpec()
	spec.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("25m")
	spec.NodeSelector = map[string]string{corev1.LabelHostname: handler.Spec.NodeName}
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	running := 0
	handlerRSS := map[int]float64{}
	steps := []int{1, 10, benchEnv("BENCH_METRICS_VMS", 30)}
	for _, n := range steps {
		for ; running < n; running++ {
			_, err := vmis.Create(context.Background(), &v1.VirtualMachineInstance{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m-%d", running)}, Spec: *spec.DeepCopy()}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		// Until the handler reports every guest (their first statistics after boot are slow).
		require.Eventually(t, func() bool {
			body := handlerMetrics(t, handler.Status.PodIP, token)
			return strings.Count(body, `kubevirt_vmi_cpu_usage_seconds_total{`) >= n &&
				strings.Count(body, "kubevirt_vmi_memory_resident_bytes{") >= n
		}, 600*time.Second, 2*time.Second, "%d guests in the handler's metrics", n)
		// Boots settle (the guests idle at their shell) before anything is measured.
		time.Sleep(10 * time.Second)

		interval := 1200 * time.Millisecond
		idle := handlerCPU(t, handler.Status.PodIP, token)
		start := time.Now()
		time.Sleep(time.Duration(scrapes) * interval)
		idleRate := (handlerCPU(t, handler.Status.PodIP, token) - idle) / time.Since(start).Seconds()

		var took []time.Duration
		partial := 0
		cpu0 := handlerCPU(t, handler.Status.PodIP, token)
		start = time.Now()
		for range scrapes {
			time.Sleep(interval)
			s := time.Now()
			body := handlerMetrics(t, handler.Status.PodIP, token)
			took = append(took, time.Since(s))
			// A launcher that does not answer within the collector's deadline is left out of
			// that scrape: a figure of the load, not an error.
			if strings.Count(body, `kubevirt_vmi_cpu_usage_seconds_total{`) < n {
				partial++
			}
		}
		spent := handlerCPU(t, handler.Status.PodIP, token) - cpu0 - idleRate*time.Since(start).Seconds()
		median, p95 := quantiles(took)
		fmt.Printf("\n%d VMIs on the node: scrape median=%.1fms p95=%.1fms; virt-handler CPU per scrape %.1fms (idle %.1fms/s), n=%d, %d scrapes without every guest\n",
			n, ms(median), ms(p95), 1000*spent/float64(scrapes), 1000*idleRate, scrapes, partial)

		body := handlerMetrics(t, handler.Status.PodIP, token)
		handlerRSS[n] = metricValue(t, body, "process_resident_memory_bytes")
		fmt.Printf("%d VMIs on the node: virt-handler resident %.1f MiB, Go heap in use %.1f MiB\n",
			n, handlerRSS[n]/mib, metricValue(t, body, "go_memstats_heap_inuse_bytes")/mib)
		var beside, qemu []float64
		for i := 0; i < n; i++ {
			m, err := podMemory(ns, fmt.Sprintf("m-%d", i))
			require.NoError(t, err)
			beside, qemu = append(beside, m.beside/mib), append(qemu, m.qemu/mib)
		}
		fmt.Printf("%d VMIs on the node: host memory of each guest's pod beside its QEMU (PSS) median %.1f MiB, max %.1f MiB (target <= 40 MiB); QEMU's PSS median %.1f MiB\n",
			n, medianOf(beside), maxOf(beside), medianOf(qemu))
	}
	first, last := steps[0], steps[len(steps)-1]
	per := (handlerRSS[last] - handlerRSS[first]) / float64(last-first) / mib
	base := handlerRSS[first]/mib - per*float64(first)
	fmt.Printf("\nvirt-handler resident memory: %.1f MiB + %.2f MiB per instance (from %d to %d instances; target <= 40 MiB + 0.25 MiB per instance)\n",
		base, per, first, last)
}

const mib = 1 << 20

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func maxOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)-1]
}

// metricValue is the value of an unlabelled metric in a Prometheus text body.
func metricValue(t *testing.T, body, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err)
			return f
		}
	}
	require.Fail(t, "no "+name+" in virt-handler's metrics")
	return 0
}

// guestMemory is a guest's host memory, split in its QEMU and what its pod runs beside it.
type guestMemory struct{ qemu, beside float64 }

// podMemory finds the QEMU of instance ns/name on this host (the local cluster's nodes are
// this host's processes) by libvirt's "-name guest=NS_NAME" and sums the proportional set
// size (PSS: shared pages split among their users) of every process in its pod: those in the
// QEMU's network namespace (pause, virt-launcher, virtqemud, the console-log sidecar) and the
// containerd shim that is the pause process's parent. Only cgroups would name a pod's
// processes better, and the local cluster's nodes do not make one per pod.
func podMemory(ns, name string) (guestMemory, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return guestMemory{}, err
	}
	marker := []byte("guest=" + ns + "_" + name + ",")
	qemuPid := ""
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte("qemu-system")) && bytes.Contains(cmdline, marker) {
			qemuPid = p.Name()
			break
		}
	}
	if qemuPid == "" {
		return guestMemory{}, fmt.Errorf("no QEMU of %s/%s on this host", ns, name)
	}
	netns, err := os.Readlink(filepath.Join("/proc", qemuPid, "ns", "net"))
	if err != nil {
		return guestMemory{}, err
	}
	var m guestMemory
	shims := map[string]bool{}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if ns, err := os.Readlink(filepath.Join("/proc", p.Name(), "ns", "net")); err != nil || ns != netns {
			continue
		}
		pss, err := processPSS(p.Name())
		if err != nil {
			continue // ended meanwhile
		}
		if p.Name() == qemuPid {
			m.qemu = pss
		} else {
			m.beside += pss
		}
		if comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm")); strings.TrimSpace(string(comm)) == "pause" {
			if stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat")); err == nil {
				// pid (comm) state ppid ...: the pause process's parent is the pod's shim.
				if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 1 {
					shims[f[1]] = true
				}
			}
		}
	}
	for pid := range shims {
		if pss, err := processPSS(pid); err == nil {
			m.beside += pss
		}
	}
	return m, nil
}

// processPSS is a process's proportional set size in bytes (smaps_rollup).
func processPSS(pid string) (float64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "smaps_rollup"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no Pss in /proc/%s/smaps_rollup", pid)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// handlerMetrics GETs the handler's /metrics as the metrics reader.
func handlerMetrics(t *testing.T, podIP, token string) string {
	t.Helper()
	status, body, err := getMetrics(podIP, token)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	return body
}

// handlerCPU is virt-handler's process_cpu_seconds_total.
func handlerCPU(t *testing.T, podIP, token string) float64 {
	t.Helper()
	for _, line := range strings.Split(handlerMetrics(t, podIP, token), "\n") {
		if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err)
			return f
		}
	}
	require.Fail(t, "no process_cpu_seconds_total in virt-handler's metrics")
	return 0
}
