package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/manager"
	"github.com/hangarvm/hangar/pkg/controller/testutil"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// BenchmarkVMStartup measures how long the controllers take to turn N VMs (runStrategy
// Always, already stored) into N instances with N launcher pods, and how much heap the
// controllers hold per instance once done. N is $HANGAR_BENCH_VMS, 1000 by default.
//
// virt-api and its etcd run in this process; pods and events go to a fake clientset (no
// kubelet, no kube-apiserver). The heap figure is the heap released when the controllers stop
// (informer caches of VMs, instances and pods, queues, expectations), so neither virt-api,
// etcd nor the fake clientset's stored objects count.
func BenchmarkVMStartup(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("HANGAR_BENCH_VMS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		benchStartup(b, n)
	}
}

func benchStartup(b *testing.B, n int) {
	b.StopTimer()
	ctx := context.Background()
	api := framework.StartVirtAPI(b)
	kube := k8sfake.NewSimpleClientset()
	testutil.GenerateNames(kube)
	testutil.SelectWatches(kube)
	for i := range n {
		if _, err := api.Client.KubevirtV1().VirtualMachines("default").Create(ctx, newVM(fmt.Sprintf("vm-%04d", i), v1.RunStrategyAlways), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}

	ctrlCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	o := manager.DefaultOptions()
	o.Resync = 0
	b.StartTimer()
	start := time.Now()
	go func() { done <- manager.Run(ctrlCtx, api.Client, kube, o) }()

	var vmisAt, podsAt, scheduledAt time.Duration
	for scheduledAt == 0 {
		time.Sleep(100 * time.Millisecond)
		if time.Since(start) > 10*time.Minute {
			b.Fatal("timed out")
		}
		if podsAt == 0 {
			pods, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if len(pods.Items) >= n {
				podsAt = time.Since(start)
			}
		}
		l, err := api.Client.KubevirtV1().VirtualMachineInstances("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
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

	// Let the controllers go idle, then weigh what they hold.
	time.Sleep(2 * time.Second)
	withControllers := heap()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second) // informer goroutines wind down
	without := heap()
	perVMI := float64(withControllers-without) / float64(n)

	pods, _ := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	fmt.Printf("controller benchmark: %d VMs (runStrategy Always), virt-api in-process on embedded etcd, pods in a fake clientset\n", n)
	fmt.Printf("  %d VMIs exist after          %6.2fs\n", n, vmisAt.Seconds())
	fmt.Printf("  %d launcher pods exist after %6.2fs\n", len(pods.Items), podsAt.Seconds())
	fmt.Printf("  %d VMIs Scheduling after     %6.2fs\n", n, scheduledAt.Seconds())
	fmt.Printf("  controller heap: %.1f MiB, %.1f KB per VMI (KubeVirt's virt-controller: ~173 KB per VMI at 8,000)\n",
		float64(withControllers-without)/(1<<20), perVMI/1000)
	b.ReportMetric(scheduledAt.Seconds(), "s-to-scheduling")
	b.ReportMetric(perVMI/1000, "KB/VMI")
}
