//go:build bench

package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestAPIMemory prints virt-api's memory per stored VM: virt-api (a process of its own) is
// measured empty and again with BENCH_MEMORY_VMS (10,000) VMs stored, created with the typed
// clientset, after a list of them all (which fills whatever a list keeps).
func TestAPIMemory(t *testing.T) {
	count, workers := envInt("BENCH_MEMORY_VMS", 10000), envInt("BENCH_WORKERS", 16)
	c := framework.StartAggregatedProcess(t, virtAPIBinary(t), nil)
	cl := newClients(t, c)
	virtAPI := direct(t, c)
	ctx := context.Background()
	const ns = "memory"
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	vms := cl.typed.KubevirtV1().VirtualMachines(ns)
	// One VM first, so that everything a first object starts (the watch cache's structures,
	// codecs, connections) is in the baseline.
	_, err = vms.Create(ctx, typedVM(count), metav1.CreateOptions{})
	require.NoError(t, err)
	settle()
	before := measureMemory(t, virtAPI)

	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range jobs {
				if _, err := vms.Create(ctx, typedVM(n), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for n := 0; n < count; n++ {
		jobs <- n
	}
	close(jobs)
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
	list, err := vms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, count+1)
	list = nil
	settle()
	after := measureMemory(t, virtAPI)

	mib := func(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
	perVM := func(a, b float64) string { return fmt.Sprintf("%.1f KiB", (b-a)/float64(count)/1024) }
	fmt.Printf("\nvirt-api memory, empty -> %d VMs stored (typed clientset sent %s)\n", count, cl.typedContentType())
	fmt.Printf("%-34s %12s %12s %14s\n", "", "empty", "stored", "per VM")
	fmt.Printf("%-34s %12s %12s %14s\n", "Go heap in use (after a GC)", mib(before.heap), mib(after.heap), perVM(before.heap, after.heap))
	fmt.Printf("%-34s %12s %12s %14s\n\n", "resident set (RSS)", mib(before.rss), mib(after.rss), perVM(before.rss, after.rss))
}

// settle lets the watch cache take in the last events and the request path's buffers go idle.
func settle() { time.Sleep(3 * time.Second) }
