//go:build e2e && bench

package e2e

import (
	"context"
	"fmt"
	"net/http"
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

// TestMetricsFigures prints what a scrape of virt-handler's /metrics costs with 1 and with
// BENCH_METRICS_VMS (20) instances running on its node: the scrape's wall time (median, p95)
// and the handler's CPU per scrape (its process_cpu_seconds_total over the scrapes, less what
// it spent idle over as long). Scrapes are spaced past the collector's reuse interval (1 s),
// so that every one asks every launcher. hack/bench/metrics.sh runs it. A benchmark: it fails
// only on errors.
func TestMetricsFigures(t *testing.T) {
	ns := namespace(t, "bench-metrics")
	waitForDefaultServiceAccount(t, ns)
	token := serviceAccountToken(t, ns, "prometheus", true)
	handler := componentPods(t, "virt-handler")[0]
	scrapes := benchEnv("BENCH_SCRAPES", 30)

	// Every guest on the handler's node; 50m of CPU each, as the boot burst (two cores).
	spec := guestSpec()
	spec.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("50m")
	spec.NodeSelector = map[string]string{corev1.LabelHostname: handler.Spec.NodeName}
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	running := 0
	for _, n := range []int{1, benchEnv("BENCH_METRICS_VMS", 20)} {
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
		cpu0 := handlerCPU(t, handler.Status.PodIP, token)
		start = time.Now()
		for range scrapes {
			time.Sleep(interval)
			s := time.Now()
			body := handlerMetrics(t, handler.Status.PodIP, token)
			took = append(took, time.Since(s))
			require.GreaterOrEqual(t, strings.Count(body, `kubevirt_vmi_cpu_usage_seconds_total{`), n)
		}
		spent := handlerCPU(t, handler.Status.PodIP, token) - cpu0 - idleRate*time.Since(start).Seconds()
		median, p95 := quantiles(took)
		fmt.Printf("\n%d VMIs on the node: scrape median=%.1fms p95=%.1fms; virt-handler CPU per scrape %.1fms (idle %.1fms/s), n=%d\n",
			n, ms(median), ms(p95), 1000*spent/float64(scrapes), 1000*idleRate, scrapes)
	}
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
