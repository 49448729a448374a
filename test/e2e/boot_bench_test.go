//go:build e2e && bench

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestBootFigures prints how long a VMI takes from creation to its banner on the serial
// console, over BENCH_BOOTS boots one after the other, then with BENCH_BURST VMIs created at
// once, and the host memory each guest costs (either may be 0: hack/bench/boot.sh runs
// bursts alone, alternating with bare QEMU's). hack/bench/boot.sh runs it next to bare QEMU
// booting the same kernel and initramfs. A benchmark: it fails only on errors.
func TestBootFigures(t *testing.T) {
	boots, burst := benchCount("BENCH_BOOTS", 10), benchCount("BENCH_BURST", 20)
	ns := namespace(t, "bench-boot")
	if boots > 0 {
		bootOneByOne(t, ns, boots)
	}
	if burst > 0 {
		bootAtOnce(t, ns, burst)
	}
	fmt.Println()
}

// bootOneByOne boots n instances one after the other and prints the median and p95 of
// creation → banner, and of each stage.
func bootOneByOne(t *testing.T, ns string, n int) {
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	ctx := context.Background()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	clock := watchBoots(t, watchCtx, ns)
	var times []time.Duration
	var stages [][]time.Duration
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("seq-%d", i)
		start := time.Now()
		_, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: guestSpec()}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, waitBanner(ctx, ns, name, 120*time.Second))
		clock.mark(name, bootStages[stageBanner])
		clock.readLauncher(t, ctx, ns, name)
		times = append(times, time.Since(start))
		if d, ok := clock.durations(name, start); ok {
			stages = append(stages, d)
		}
		require.NoError(t, vmis.Delete(ctx, name, metav1.DeleteOptions{}))
		// The next boot starts on a quiet node, as each bare QEMU does: a launcher shutting
		// down (guest, libvirtd, the pod's teardown) takes CPU from the next guest's start.
		untilGone(t, ns)
	}
	median, p95 := quantiles(times)
	fmt.Printf("\nHangar VMI create -> banner: n=%d median=%.2fs p95=%.2fs\n", n, median.Seconds(), p95.Seconds())
	printStages("Hangar boot stages", stages)
}

// bootAtOnce creates n instances at once (the sequential ones gone), waits until every
// one printed its banner, and prints how long that took, the host memory per guest, where
// the host's CPU went meanwhile and each stage's median and p95.
func bootAtOnce(t *testing.T, ns string, n int) {
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	ctx := context.Background()
	memBefore := usedMemory(t)
	// Two cores hold 20 launchers only with a small CPU request each (100m per vCPU by default).
	spec := guestSpec()
	spec.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("50m")
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	clock := watchBoots(t, watchCtx, ns)
	cpuBefore := sampleCPU()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	created := make([]time.Time, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("burst-%d", i)
		created[i] = time.Now()
		_, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *spec.DeepCopy()}, metav1.CreateOptions{})
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := waitBanner(ctx, ns, name, 600*time.Second)
			clock.mark(name, bootStages[stageBanner])
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all := time.Since(start)
	cpuAfter := sampleCPU()
	perGuest := (usedMemory(t) - memBefore) / int64(n)
	rss := qemuRSS(t) / int64(n)
	fmt.Printf("%d VMIs created at once: all printed the banner after %.1fs\n", n, all.Seconds())
	fmt.Printf("host memory per guest: %d MiB (node used-memory delta), QEMU RSS %d MiB\n", perGuest>>20, rss>>20)
	printCPU("Hangar burst, the host's CPU until the last banner", cpuBefore, cpuAfter, n)
	stopWatch()
	var stages [][]time.Duration
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("burst-%d", i)
		clock.readLauncher(t, ctx, ns, name)
		if d, ok := clock.durations(name, created[i]); ok {
			stages = append(stages, d)
		}
	}
	printStages("Hangar burst stages", stages)
}

// waitBanner waits until an instance runs, then opens its console and waits for the banner.
// It watches the instance rather than retrying the console: twenty consoles retried every
// 200 ms cost kube-apiserver and virt-api more CPU than the start path being measured, and
// the guest prints its banner seconds after it runs. It reports instead of failing the test,
// so goroutines may call it.
func waitBanner(ctx context.Context, ns, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := untilRunning(ctx, ns, name); err != nil {
		return err
	}
	for {
		conn, err := dialStream(ns, name, "console")
		if err != nil {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: no console: %w", name, err)
			case <-time.After(200 * time.Millisecond):
				continue
			}
		}
		defer conn.Close()
		deadline, _ := ctx.Deadline()
		_ = conn.SetReadDeadline(deadline)
		var seen strings.Builder
		for !strings.Contains(seen.String(), banner) {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return fmt.Errorf("%s: no banner (%v); saw %q", name, err, seen.String())
			}
			seen.Write(data)
		}
		return nil
	}
}

// untilGone waits until the namespace holds neither instances nor pods.
func untilGone(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		list, err := hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		pods, perr := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && perr == nil && len(list.Items) == 0 && len(pods.Items) == 0
	}, 120*time.Second, 100*time.Millisecond)
}

// untilRunning watches an instance until its phase is Running.
func untilRunning(ctx context.Context, ns, name string) error {
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	for {
		w, err := vmis.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			return fmt.Errorf("%s: watch: %w", name, err)
		}
		for ev := range w.ResultChan() {
			vmi, ok := ev.Object.(*v1.VirtualMachineInstance)
			if !ok {
				continue
			}
			switch vmi.Status.Phase {
			case v1.Running:
				w.Stop()
				return nil
			case v1.Failed, v1.Succeeded:
				w.Stop()
				return fmt.Errorf("%s: phase %s before its banner", name, vmi.Status.Phase)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: not running: %w", name, ctx.Err())
		}
	}
}

// benchCount is the count in the environment variable name, 0 included, or def.
func benchCount(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func quantiles(d []time.Duration) (median, p95 time.Duration) {
	sorted := append([]time.Duration(nil), d...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	idx := (len(sorted)*95+99)/100 - 1
	return sorted[len(sorted)/2], sorted[idx]
}

// usedMemory is the host's memory in use (MemTotal - MemAvailable), in bytes.
func usedMemory(t *testing.T) int64 {
	t.Helper()
	fields := hostMemory(t)
	return fields["MemTotal"] - fields["MemAvailable"]
}

// hostMemory is /proc/meminfo, each field in bytes.
func hostMemory(t *testing.T) map[string]int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/meminfo")
	require.NoError(t, err)
	fields := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.Fields(line)
		if len(parts) >= 2 {
			v, _ := strconv.ParseInt(parts[1], 10, 64)
			fields[strings.TrimSuffix(parts[0], ":")] = v * 1024
		}
	}
	return fields
}

// qemuRSS sums the resident memory of the benchmark's QEMU processes.
func qemuRSS(t *testing.T) int64 {
	t.Helper()
	out, err := exec.Command("sh", "-c", "ps -eo rss=,args= | grep '[q]emu-system.*guest=bench-boot_' | awk '{s+=$1} END {print s+0}'").Output()
	require.NoError(t, err)
	kib, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	require.NoError(t, err)
	return kib * 1024
}
