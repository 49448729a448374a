//go:build kube

package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// BenchmarkVMStartupKubeAPIServer is BenchmarkVMStartup on real components: the controllers
// talk to a real kube-apiserver only (as the virt-controller ServiceAccount), virt-api sits
// behind it through an APIService, and launcher pods are real Pod objects in kube-apiserver's
// etcd. It measures how long N stored VMs (runStrategy Always) take to become N Scheduling
// instances with N pods, and the heap the controllers hold per instance (virt-api runs in this
// process too: the figure is the heap released when the controllers stop). N is
// $HANGAR_BENCH_VMS, 1000 by default.
func BenchmarkVMStartupKubeAPIServer(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("HANGAR_BENCH_VMS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		benchStartupKube(b, n)
	}
}

func benchStartupKube(b *testing.B, n int) {
	b.StopTimer()
	ctx := context.Background()
	c := startCluster(b)
	ns := c.namespace("bench")
	createVMs(b, c, ns, n)

	b.StartTimer()
	start := time.Now()
	stop := c.startController()
	var vmisAt, podsAt, scheduledAt time.Duration
	for scheduledAt == 0 {
		time.Sleep(200 * time.Millisecond)
		if time.Since(start) > 10*time.Minute {
			b.Fatal("timed out")
		}
		if podsAt == 0 {
			pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				b.Fatal(err)
			}
			if len(pods.Items) >= n {
				podsAt = time.Since(start)
			}
		}
		l, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			b.Fatal(err)
		}
		if len(l.Items) >= n && vmisAt == 0 {
			vmisAt = time.Since(start)
		}
		scheduling := 0
		for _, vmi := range l.Items {
			if vmi.Status.Phase == v1.Scheduling {
				scheduling++
			}
		}
		if scheduling >= n && podsAt > 0 {
			scheduledAt = time.Since(start)
		}
	}
	b.StopTimer()

	time.Sleep(2 * time.Second) // idle
	withControllers := heap()
	stop()
	time.Sleep(time.Second)
	without := heap()
	perVMI := float64(withControllers-without) / float64(n)
	requests := c.requests.countPrefix("")

	fmt.Printf("controller benchmark: %d VMs (runStrategy Always), real kube-apiserver, virt-api behind it (in-process), real Pod objects\n", n)
	fmt.Printf("  %d VMIs exist after          %6.2fs\n", n, vmisAt.Seconds())
	fmt.Printf("  %d launcher pods exist after %6.2fs\n", n, podsAt.Seconds())
	fmt.Printf("  %d VMIs Scheduling after     %6.2fs (%.1f ms per VMI)\n", n, scheduledAt.Seconds(), scheduledAt.Seconds()*1000/float64(n))
	fmt.Printf("  controller requests: %d (%.1f per VMI)\n", requests, float64(requests)/float64(n))
	for _, line := range c.requests.byResource() {
		fmt.Printf("    %s\n", line)
	}
	fmt.Printf("  controller heap: %.1f MiB, %.1f KB per VMI (KubeVirt's virt-controller: ~173 KB per VMI at 8,000)\n",
		float64(withControllers-without)/(1<<20), perVMI/1000)
	b.ReportMetric(scheduledAt.Seconds(), "s-to-scheduling")
	b.ReportMetric(perVMI/1000, "KB/VMI")
}

// createVMs stores n Always VMs, a few at a time.
func createVMs(b *testing.B, c *cluster, ns string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(context.Background(),
					newVM(fmt.Sprintf("vm-%04d", i), v1.RunStrategyAlways), metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
