//go:build e2e && bench

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/launcherpod"
	hangarinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
)

// bootStages are the steps from a VMI's creation to its banner, in order, each named by who
// does it. Object timestamps have a resolution of one second, so the clock is this process's
// (the moment a watch event first shows the step done; watch latency is a few milliseconds)
// or, inside the launcher, the container runtime's timestamp of the launcher's log line.
var bootStages = []string{
	"launcher pod created (virt-controller)",
	"pod bound to a node (scheduler)",
	"launcher serving (kubelet: volumes, sandbox, container; virt-launcher: libvirtd)",
	"guest starting (virt-handler: launcher found, pod network, sync)",
	"guest running (libvirt: define, QEMU start, its queries of QEMU)",
	"instance Running seen (status: virt-handler, virt-api, watch)",
	"banner on the console (guest boot, console attach)",
}

// launcherLogStages are the launcher's log lines that mark stages 2-4 (cmd/virt-launcher,
// pkg/launcher): the first line containing each.
var launcherLogStages = map[string]string{
	`"serving"`:                      bootStages[2],
	`"guest state" phase="Starting"`: bootStages[3],
	`"guest state" phase="Running"`:  bootStages[4],
}

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

// readLauncherLog marks the stages the launcher's log shows, from the runtime's timestamps
// of its lines (kubectl logs --timestamps).
func (c *bootClock) readLauncherLog(t *testing.T, ctx context.Context, ns, vmi string) {
	t.Helper()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, pod := range pods.Items {
		if len(pod.OwnerReferences) == 0 || pod.OwnerReferences[0].Name != vmi {
			continue
		}
		raw, err := kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: launcherpod.ComputeContainer, Timestamps: true}).DoRaw(ctx)
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
			for marker, stage := range launcherLogStages {
				if strings.Contains(text, marker) {
					c.markAt(vmi, stage, at)
				}
			}
		}
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
		c.mark(vmi, bootStages[0])
		if pod.Spec.NodeName != "" {
			c.mark(vmi, bootStages[1])
		}
	}
	onVMI := func(obj any) {
		if vmi, ok := obj.(*v1.VirtualMachineInstance); ok && vmi.Status.Phase == v1.Running {
			c.mark(vmi.Name, bootStages[5])
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
