//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// TestLargeGuestFitsItsPod runs a 4 GiB, 4-vCPU guest with a memory limit that writes to
// nearly all of its memory, and follows its launcher pod's memory cgroup meanwhile: the pod's
// working set (usage less inactive page cache, what the kubelet and the OOM killer weigh)
// stays below the pod's limit, nothing in it is OOM-killed, and the headroom left is printed.
// The limit is the guest's memory plus launcherpod.MemoryOverhead.
func TestLargeGuestFitsItsPod(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-overhead")
	const guestMiB = 4096
	spec := guestSpec()
	guest := resource.MustParse(fmt.Sprintf("%dMi", guestMiB))
	spec.Domain.Resources.Requests[corev1.ResourceMemory] = guest
	spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: guest}
	spec.Domain.CPU = &v1.CPU{Cores: 4, Sockets: 1, Threads: 1}
	_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "large"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)

	console := attach(t, ns, "large", "console")
	vmi := waitVMI(t, ns, "large", 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	console.waitFor(t, banner, 180*time.Second)
	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	var request, limit resource.Quantity
	for _, c := range pods[0].Spec.Containers {
		if c.Name == layout.ComputeContainer {
			request, limit = c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceMemory]
		}
	}
	require.False(t, limit.IsZero(), "the compute container has a memory limit")
	// The pod's cgroup holds the sidecars too (guest-console-log), within their own limits.
	for _, c := range pods[0].Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			limit.Add(c.Resources.Limits[corev1.ResourceMemory])
		}
	}

	dir := podMemoryCgroup(t, vmi.UID)
	var (
		mu   sync.Mutex
		peak int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			if ws, err := workingSet(dir); err == nil {
				mu.Lock()
				peak = max(peak, ws)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	// The initramfs guest has no swap: a tmpfs of 3.5 GiB filled with dd is 3.5 GiB of guest
	// memory written, beside the kernel's and the shell's own.
	const fillMiB = 3584
	// The answers are computed by the shell, so that the console's echo of the command does
	// not pass for them.
	console.typeUntil(t, "mkdir -p /fill && mount -t tmpfs -o size=3600m fill /fill && echo MOUNT$((40+2))", "MOUNT42")
	start := time.Now()
	// Typed once: the shell is there, and the fill takes a while under TCG.
	require.NoError(t, console.conn.WriteMessage(gwebsocket.BinaryMessage,
		[]byte(fmt.Sprintf("dd if=/dev/zero of=/fill/f bs=1M count=%d 2>/dev/null; echo FILLED-$((%d+1))\r", fillMiB, fillMiB))))
	console.waitFor(t, fmt.Sprintf("FILLED-%d", fillMiB+1), 10*time.Minute)
	t.Logf("the guest wrote %d MiB in %s", fillMiB, time.Since(start).Round(time.Second))
	time.Sleep(2 * time.Second) // a last sample at rest
	close(stop)
	<-done

	mu.Lock()
	defer mu.Unlock()
	const mi = 1 << 20
	oomKills := cgroupStat(t, dir, "memory.oom_control", "oom_kill")
	t.Logf("pod working set peak %d MiB (%d MiB beyond the guest's writes); compute container request %s, limit (with the sidecars') %s; headroom %d MiB",
		peak/mi, peak/mi-fillMiB, request.String(), limit.String(), (limit.Value()-peak)/mi)
	assert.Zero(t, oomKills, "OOM kills in the launcher pod")
	assert.Greater(t, peak, int64(fillMiB)*mi, "the guest's writes reached the host: the pod's working set grew past them")
	assert.Less(t, peak, limit.Value(), "the working set stays below the limit")
	_, err = hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "large", metav1.GetOptions{})
	require.NoError(t, err)
}

// podMemoryCgroup is the memory cgroup (v1) directory of the pod of a launcher, found from
// the launcher process's own cgroup: .../pod<uid>/<container>.
func podMemoryCgroup(t *testing.T, uid types.UID) string {
	t.Helper()
	pids := launcherProcesses(t, uid)
	require.NotEmpty(t, pids, "the launcher runs on this host")
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids[0]))
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",memory,") {
			dir := filepath.Join("/sys/fs/cgroup/memory", filepath.Dir(parts[2]))
			require.Contains(t, filepath.Base(dir), "pod", "the container's parent is the pod's cgroup")
			return dir
		}
	}
	t.Fatalf("no memory cgroup in %q", raw)
	return ""
}

// workingSet is a cgroup's usage less its inactive page cache, as the kubelet counts it.
func workingSet(dir string) (int64, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return 0, err
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, err
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, "total_inactive_file "); ok {
			inactive, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, err
			}
			return max(usage-inactive, 0), nil
		}
	}
	return usage, nil
}

// cgroupStat reads one "key value" line of a cgroup file.
func cgroupStat(t *testing.T, dir, file, key string) int64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in %s: %q", key, file, raw)
	return 0
}
