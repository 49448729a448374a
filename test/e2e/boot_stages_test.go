//go:build e2e && bench

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	hangarinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/test/procstat"
)

// The boot stages in order: indexes into bootStages.
const (
	stagePodCreated = iota
	stageBound
	stageSandbox
	stageContainer
	stageLibvirtdStarting
	stageServing
	stageGuestStarting
	stageGuestRunning
	stageRunningSeen
	stageBanner
)

// bootStages are the steps from a VMI's creation to its banner, in order, each named by who
// does it. Object timestamps have a resolution of one second, so the clock is this process's
// (the moment a watch event first shows the step done; watch latency is a few milliseconds),
// a process's start time on the node (the benchmark runs on it; /proc counts in 10 ms ticks)
// or, inside the launcher, the container runtime's timestamp of the launcher's log line.
var bootStages = []string{
	stagePodCreated:       "launcher pod created (virt-controller)",
	stageBound:            "pod bound to a node (scheduler)",
	stageSandbox:          "pod sandbox running (kubelet: volumes; runtime: pod network, shim, pause)",
	stageContainer:        "launcher container created (kubelet, runtime)",
	stageLibvirtdStarting: "libvirtd starting (runtime: container start; virt-launcher: its own start)",
	stageServing:          "launcher serving (libvirtd's start)",
	stageGuestStarting:    "guest starting (virt-handler: launcher found, pod network, sync)",
	stageGuestRunning:     "guest running (libvirt: define, QEMU start, its queries of QEMU)",
	stageRunningSeen:      "instance Running seen (status: virt-handler, virt-api, watch)",
	stageBanner:           "banner on the console (guest boot, console attach)",
}

// podProcessStages are the processes of the launcher pod whose start marks a stage: the
// sandbox's pause and the launcher's container. A container's process starts when the
// runtime creates it (runc's init, which execs the command once the container is started).
var podProcessStages = map[string]string{
	"pause":         bootStages[stageSandbox],
	"virt-launcher": bootStages[stageContainer],
}

// launcherLogStages are the launcher's log lines that mark stages (cmd/virt-launcher,
// pkg/launcher): the first line containing each.
var launcherLogStages = map[string]string{
	`"serving"`:                      bootStages[stageServing],
	`"guest state" phase="Starting"`: bootStages[stageGuestStarting],
	`"guest state" phase="Running"`:  bootStages[stageGuestRunning],
}

// libvirtdReady is the launcher's log line saying how long libvirtd took to answer: the line's
// time less that is when the launcher started libvirtd.
var libvirtdReady = regexp.MustCompile(`"libvirtd ready" .*after="([^"]+)"`)

// bootClock records, per instance, when each stage was first seen done.
type bootClock struct {
	mu   sync.Mutex
	seen map[string]map[string]time.Time
}

func (c *bootClock) mark(vmi, stage string) { c.markAt(vmi, stage, time.Now()) }

func (c *bootClock) markAt(vmi, stage string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[vmi] == nil {
		c.seen[vmi] = map[string]time.Time{}
	}
	if _, ok := c.seen[vmi][stage]; !ok {
		c.seen[vmi][stage] = at
	}
}

// readLauncher marks the stages the launcher pod's processes and the launcher's log show:
// when the processes started, and the runtime's timestamps of the log's lines (kubectl logs
// --timestamps). The pod must still run.
func (c *bootClock) readLauncher(t *testing.T, ctx context.Context, ns, vmi string) {
	t.Helper()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, pod := range pods.Items {
		if len(pod.OwnerReferences) == 0 || pod.OwnerReferences[0].Name != vmi {
			continue
		}
		c.readPodProcesses(t, vmi, pod.UID)
		raw, err := kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: layout.ComputeContainer, Timestamps: true}).DoRaw(ctx)
		require.NoError(t, err)
		for _, line := range strings.Split(string(raw), "\n") {
			stamp, text, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, stamp)
			if err != nil {
				continue
			}
			if m := libvirtdReady.FindStringSubmatch(text); m != nil {
				if after, err := time.ParseDuration(m[1]); err == nil {
					c.markAt(vmi, bootStages[stageLibvirtdStarting], at.Add(-after))
				}
			}
			for marker, stage := range launcherLogStages {
				if strings.Contains(text, marker) {
					c.markAt(vmi, stage, at)
				}
			}
		}
	}
}

// readPodProcesses marks when the pod's processes of podProcessStages started: it finds them
// by the pod's cgroup, which names its UID (with underscores under the systemd driver).
func (c *bootClock) readPodProcesses(t *testing.T, vmi string, uid types.UID) {
	t.Helper()
	names := []string{"pod" + string(uid), "pod" + strings.ReplaceAll(string(uid), "-", "_")}
	all, err := procstat.All()
	require.NoError(t, err)
	found := 0
	for pid, st := range all {
		stage, ok := podProcessStages[st.Comm]
		if !ok {
			continue
		}
		cgroup, err := procstat.Cgroup(pid)
		if err != nil || !strings.Contains(cgroup, names[0]) && !strings.Contains(cgroup, names[1]) {
			continue
		}
		started, err := st.Started()
		require.NoError(t, err)
		c.markAt(vmi, stage, started)
		found++
	}
	if found < len(podProcessStages) {
		t.Logf("%s: %d of the launcher pod's processes found on this host (the benchmark must run on the node)", vmi, found)
	}
}

// durations returns each stage's duration for vmi, created at start; false if one is missing.
func (c *bootClock) durations(vmi string, start time.Time) ([]time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Duration, 0, len(bootStages))
	prev := start
	for _, s := range bootStages {
		at, ok := c.seen[vmi][s]
		if !ok {
			return nil, false
		}
		if at.Before(prev) { // two steps seen in one event
			at = prev
		}
		out = append(out, at.Sub(prev))
		prev = at
	}
	return out, true
}

// watchBoots starts watching ns's launcher pods and instances for the stages' steps.
func watchBoots(t *testing.T, ctx context.Context, ns string) *bootClock {
	t.Helper()
	c := &bootClock{seen: map[string]map[string]time.Time{}}
	onPod := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || len(pod.OwnerReferences) == 0 {
			return
		}
		vmi := pod.OwnerReferences[0].Name
		c.mark(vmi, bootStages[stagePodCreated])
		if pod.Spec.NodeName != "" {
			c.mark(vmi, bootStages[stageBound])
		}
	}
	onVMI := func(obj any) {
		if vmi, ok := obj.(*v1.VirtualMachineInstance); ok && vmi.Status.Phase == v1.Running {
			c.mark(vmi.Name, bootStages[stageRunningSeen])
		}
	}
	pods := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	_, err := pods.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod, UpdateFunc: func(_, obj any) { onPod(obj) },
	})
	require.NoError(t, err)
	vmis := hangarinformers.NewSharedInformerFactoryWithOptions(hangar, 0, hangarinformers.WithNamespace(ns))
	_, err = vmis.Kubevirt().V1().VirtualMachineInstances().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onVMI, UpdateFunc: func(_, obj any) { onVMI(obj) },
	})
	require.NoError(t, err)
	pods.Start(ctx.Done())
	vmis.Start(ctx.Done())
	pods.WaitForCacheSync(ctx.Done())
	vmis.WaitForCacheSync(ctx.Done())
	return c
}

// printStages prints each stage's median and p95 over the boots, under title.
func printStages(title string, per [][]time.Duration) {
	if len(per) == 0 {
		fmt.Printf("%s: no boot had every stage seen\n", title)
		return
	}
	fmt.Printf("%s (n=%d; median, p95):\n", title, len(per))
	for i, s := range bootStages {
		col := make([]time.Duration, len(per))
		for j := range per {
			col[j] = per[j][i]
		}
		median, p95 := quantiles(col)
		fmt.Printf("  %-82s %6.2fs %6.2fs\n", s, median.Seconds(), p95.Seconds())
	}
}
