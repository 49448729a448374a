//go:build bench

// Package bench measures Hangar's API against the same schema served as a CRD by the same
// kube-apiserver. Run it with hack/bench/api.sh; it prints figures and fails only on errors.
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	"github.com/hangarvm/hangar/pkg/admission/podpolicy"
	"github.com/hangarvm/hangar/test/integration/framework"
)

var (
	vmGVR  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmiGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	crdGVR = schema.GroupVersionResource{Group: "bench.hangar.io", Version: "v1", Resource: "virtualmachines"}
)

// api is one row of the table: a way to create and list objects of one namespace.
type api struct {
	name string
	// checked: the namespace gets a quota and a LimitRange for virt-api's launcher pod
	// checks to look at.
	checked bool
	new     func(c *clients, ns string) target
}

// target creates and gets the n-th object and lists a page.
type target struct {
	create func(ctx context.Context, n int) error
	get    func(ctx context.Context, n int) error
	list   func(ctx context.Context, opts metav1.ListOptions) (items int, next string, err error)
}

// apis are the rows. The first three compare Hangar with a CRD on VMs that do not run
// (Halted): Hangar through its generated (typed) clientset, which speaks protobuf, and
// Hangar and the CRD through client-go's dynamic client, which speaks JSON to both. The
// others are the creates that pay for the launcher pod checks (the pod is built and checked
// against the namespace): VMs that run, and instances.
var apis = []api{
	{name: "Hangar, typed clientset", new: func(c *clients, ns string) target { return typedVMs(c, ns) }},
	{name: "Hangar, dynamic (JSON)", new: func(c *clients, ns string) target { return dynamicTarget(c, vmGVR, ns, vmObject("Halted")) }},
	{name: "CRD, dynamic (JSON)", new: func(c *clients, ns string) target { return dynamicTarget(c, crdGVR, ns, vmObject("Halted")) }},
	{name: "Hangar JSON, VMs Always", checked: true, new: func(c *clients, ns string) target { return dynamicTarget(c, vmGVR, ns, vmObject("Always")) }},
	{name: "Hangar JSON, instances", checked: true, new: func(c *clients, ns string) target { return dynamicTarget(c, vmiGVR, ns, vmiObject) }},
}

const (
	rowTyped = 0
	rowCRD   = 2
)

type result struct {
	createsPerSecond                  float64
	listP50, listP95, listAllInOneP50 time.Duration
	// createCPU is each process's CPU time per create (cpuProcesses).
	createCPU map[string]time.Duration
}

// TestAPIThroughput prints creates/s and list latencies of every row, BENCH_RUNS times on a
// fresh cluster each (kube-apiserver, virt-api as a process of its own, an etcd each), then
// the medians and ranges.
func TestAPIThroughput(t *testing.T) {
	count, workers, lists, runs := envInt("BENCH_VMS", 5000), envInt("BENCH_WORKERS", 16), envInt("BENCH_LISTS", 5), envInt("BENCH_RUNS", 1)
	// BENCH_LAUNCHER_POD_CHECKS=off measures virt-api without the HangarLauncherPod admission
	// plugin, for a before/after pair on the same code.
	checks := os.Getenv("BENCH_LAUNCHER_POD_CHECKS") != "off"
	binary := virtAPIBinary(t)
	framework.KubeAPIServerProfiling = profileDir() != ""
	results := make([][]result, len(apis))
	var typedContentType string
	for run := 0; run < runs; run++ {
		t.Run(fmt.Sprintf("run%d", run+1), func(t *testing.T) {
			c := framework.StartAggregatedProcess(t, binary, func(o *virtapi.Options) {
				if !checks {
					o.RecommendedOptions.Admission.DisablePlugins = []string{podpolicy.PluginName}
				}
			})
			cl := newClients(t, c)
			installCRD(t, c, cl.dynamic)
			profile, meter := startProfile(t, c), newCPUMeter(c)
			for i, a := range apis {
				ns := fmt.Sprintf("bench-%d", i)
				_, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
				require.NoError(t, err)
				if a.checked {
					namespacePolicies(t, c, ns)
				}
				profile.begin(i)
				r := measure(t, a.new(cl, ns), meter, count, workers, lists)
				profile.end()
				results[i] = append(results[i], r)
			}
			typedContentType = cl.typedContentType()
			printRun(fmt.Sprintf("run %d of %d", run+1, runs), results, run)
			printListSources(t, c)
		})
	}
	fmt.Printf("\nAPI throughput: %d objects per row, %d concurrent clients, %d lists each, %d runs; launcher pod checks %s; the typed clientset sent %s\n",
		count, workers, lists, runs, map[bool]string{true: "on", false: "off"}[checks], typedContentType)
	printSummary(results)
}

// measure creates count objects with workers clients, then lists them lists times as kubectl
// does (pages of 500) and in one piece.
func measure(t *testing.T, tg target, meter *cpuMeter, count, workers, lists int) result {
	ctx := context.Background()
	var r result
	cpu := meter.read(t)
	start := time.Now()
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range jobs {
				if err := tg.create(ctx, n); err != nil {
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
	r.createsPerSecond = float64(count) / time.Since(start).Seconds()
	r.createCPU = perObject(cpu, meter.read(t), count)

	var paged, whole []time.Duration
	for l := 0; l < lists; l++ {
		start := time.Now()
		total, cont := 0, ""
		for {
			items, next, err := tg.list(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			require.NoError(t, err)
			total += items
			if cont = next; cont == "" {
				break
			}
		}
		paged = append(paged, time.Since(start))
		require.Equal(t, count, total)
		start = time.Now()
		items, _, err := tg.list(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		whole = append(whole, time.Since(start))
		require.Equal(t, count, items)
	}
	r.listP50, r.listP95 = percentile(paged, 50), percentile(paged, 95)
	r.listAllInOneP50 = percentile(whole, 50)
	return r
}

func printRun(title string, results [][]result, run int) {
	fmt.Printf("\n%s\n%-26s %10s %10s %10s %18s\n", title, "API", "creates/s", "list p50", "list p95", "list (1 page) p50")
	for i, a := range apis {
		r := results[i][run]
		fmt.Printf("%-26s %10.0f %10s %10s %18s\n", a.name, r.createsPerSecond,
			r.listP50.Round(time.Millisecond), r.listP95.Round(time.Millisecond), r.listAllInOneP50.Round(time.Millisecond))
	}
	fmt.Printf("\nCPU per create (µs)       ")
	for _, p := range cpuProcesses {
		fmt.Printf(" %15s", p)
	}
	fmt.Printf(" %10s\n", "total")
	for i, a := range apis {
		fmt.Printf("%-26s", a.name)
		var total time.Duration
		for _, p := range cpuProcesses {
			d := results[i][run].createCPU[p]
			total += d
			fmt.Printf(" %15d", d.Microseconds())
		}
		fmt.Printf(" %10d\n", total.Microseconds())
	}
}

// printListSources prints where each server's lists took the run's objects from: the watch
// cache (as they should, paged lists too) or etcd.
func printListSources(t *testing.T, c *framework.Cluster) {
	virtAPI, kube := direct(t, c), c.Kube.Discovery().RESTClient()
	for _, s := range []struct {
		server string
		client rest.Interface
		gvr    schema.GroupVersionResource
	}{{"virt-api", virtAPI, vmGVR}, {"virt-api", virtAPI, vmiGVR}, {"kube-apiserver", kube, crdGVR}} {
		cache, etcd := listSources(t, s.client, s.gvr.Group, s.gvr.Resource)
		fmt.Printf("objects listed of %s.%s by %s: %.0f from the watch cache, %.0f from etcd\n", s.gvr.Resource, s.gvr.Group, s.server, cache, etcd)
	}
}

// printSummary prints each row's medians over the runs with their ranges, and the ratios of
// the Hangar rows to the CRD row run by run.
func printSummary(results [][]result) {
	if len(results[0]) == 0 {
		return // no run finished
	}
	fmt.Printf("%-26s %22s %26s %18s\n", "API (median [min-max])", "creates/s", "list p50 (pages of 500)", "list (1 page) p50")
	for i, a := range apis {
		var creates, listP50, whole []float64
		for _, r := range results[i] {
			creates = append(creates, r.createsPerSecond)
			listP50 = append(listP50, float64(r.listP50)/float64(time.Millisecond))
			whole = append(whole, float64(r.listAllInOneP50)/float64(time.Millisecond))
		}
		fmt.Printf("%-26s %22s %26s %18s\n", a.name, spread(creates, ""), spread(listP50, " ms"), spread(whole, " ms"))
	}
	for i := range apis[:rowCRD] {
		var creates, lists []float64
		for run := range results[i] {
			creates = append(creates, results[i][run].createsPerSecond/results[rowCRD][run].createsPerSecond)
			lists = append(lists, float64(results[i][run].listP50)/float64(results[rowCRD][run].listP50))
		}
		fmt.Printf("ratio %s / CRD: creates %s, list p50 %s\n", apis[i].name, spreadRatio(creates), spreadRatio(lists))
	}
	fmt.Println()
}

func spread(v []float64, unit string) string {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 1 {
		return fmt.Sprintf("%.0f%s", s[0], unit)
	}
	return fmt.Sprintf("%.0f%s [%.0f-%.0f]", median(s), unit, s[0], s[len(s)-1])
}

func spreadRatio(v []float64) string {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 1 {
		return fmt.Sprintf("%.2f", s[0])
	}
	return fmt.Sprintf("%.2f [%.2f-%.2f]", median(s), s[0], s[len(s)-1])
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func percentile(d []time.Duration, p int) time.Duration {
	sorted := append([]time.Duration(nil), d...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	idx := (len(sorted)*p + 99) / 100
	if idx > 0 {
		idx--
	}
	return sorted[idx]
}

// virtAPIBinary is the virt-api build hack/bench/api.sh makes ($HANGAR_VIRT_API).
func virtAPIBinary(t *testing.T) string {
	path := os.Getenv("HANGAR_VIRT_API")
	if path == "" {
		t.Fatal("HANGAR_VIRT_API must name a build of cmd/virt-api: run hack/bench/api.sh")
	}
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	return abs
}

// dynamicTarget creates and lists with client-go's dynamic client (JSON).
func dynamicTarget(c *clients, gvr schema.GroupVersionResource, ns string, object objectFunc) target {
	res := c.dynamic.Resource(gvr).Namespace(ns)
	return target{
		create: func(ctx context.Context, n int) error {
			_, err := res.Create(ctx, object(gvr, n), metav1.CreateOptions{})
			return err
		},
		get: func(ctx context.Context, n int) error {
			_, err := res.Get(ctx, object(gvr, n).GetName(), metav1.GetOptions{})
			return err
		},
		list: func(ctx context.Context, opts metav1.ListOptions) (int, string, error) {
			list, err := res.List(ctx, opts)
			if err != nil {
				return 0, "", err
			}
			return len(list.Items), list.GetContinue(), nil
		},
	}
}
