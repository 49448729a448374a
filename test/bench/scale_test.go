//go:build bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// fakeNodeAnnotation marks the nodes KWOK plays.
const fakeNodeAnnotation = "kwok.x-k8s.io/node"

// TestControlPlaneScale runs Hangar's control plane for real (kube-apiserver and its etcd,
// kube-scheduler, virt-api with its etcd, virt-controller) over BENCH_SCALE_NODES (100) nodes
// that KWOK plays: KWOK keeps the nodes Ready and runs the launcher pods scheduled to them
// (status only, no containers). A stand-in for virt-handler, clearly not it, reports each
// instance whose launcher pod runs as Running, as the handler does once the guest has started.
// Instances are created in steps up to BENCH_SCALE_VMIS (8,000); at each step the test waits
// for every instance to run and prints virt-api's and virt-controller's heaps per instance.
// Meanwhile a fixed load (BENCH_RATE creates/s and twice as many gets/s of VMs) measures the
// API's latency; Kubernetes' SLO for mutating calls is p99 <= 1 s.
func TestControlPlaneScale(t *testing.T) {
	nodes, total, rate := envInt("BENCH_SCALE_NODES", 100), envInt("BENCH_SCALE_VMIS", 8000), envInt("BENCH_RATE", 5)
	steps := []int{1000, total}
	if total <= 1000 {
		steps = []int{total}
	}
	kwok, controller := binaryFromEnv(t, "HANGAR_KWOK"), binaryFromEnv(t, "HANGAR_VIRT_CONTROLLER")
	scheduler, err := framework.BinaryPath("kube-scheduler")
	require.NoError(t, err)

	c := framework.StartAggregatedProcess(t, virtAPIBinary(t), nil)
	ctx := context.Background()
	_, err = c.Kube.CoreV1().ConfigMaps("hangar").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hangar-config"},
		Data:       map[string]string{"useEmulation": "true"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	runProcess(t, dir, "kube-scheduler", scheduler, "--kubeconfig="+c.AdminKubeconfig, "--leader-elect=false", "--secure-port=0")
	kwokArgs := []string{"--kubeconfig=" + c.AdminKubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + fakeNodeAnnotation + "=fake", "--cidr=10.128.0.0/12"}
	// KWOK's own stages (node initialize and heartbeat, pod ready, complete and delete), from
	// its module: hack/bench/scale.sh names them.
	for _, stage := range strings.Split(os.Getenv("HANGAR_KWOK_STAGES"), ",") {
		if stage != "" {
			kwokArgs = append(kwokArgs, "--config="+stage)
		}
	}
	runProcess(t, dir, "kwok", kwok, kwokArgs...)
	metricsAddr := freeAddress(t)
	controllerPid := runProcess(t, dir, "virt-controller", controller, "--kubeconfig="+c.AdminKubeconfig, "--leader-elect=false",
		"--healthz-bind-address=0", "--metrics-bind-address="+metricsAddr, "--metrics-insecure-loopback",
		"--config-namespace=hangar", "--launcher-image=example/launcher:bench", "--kube-api-burst=400")
	for i := 0; i < nodes; i++ {
		createFakeNode(t, c, fmt.Sprintf("kwok-node-%03d", i))
	}
	stopStandIn := handlerStandIn(t, c)
	defer stopStandIn()

	const ns = "scale"
	_, err = c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale-load"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	virtAPI := direct(t, c)
	settle()
	baseAPI, baseController := measureMemory(t, virtAPI), controllerHeap(t, metricsAddr, controllerPid)

	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan latencies)
	go func() { loadDone <- offerLoad(loadCtx, typedVMs(newClients(t, c), "scale-load"), rate) }()

	cl := newClients(t, c)
	vmis := cl.typed.KubevirtV1().VirtualMachineInstances(ns)
	type row struct {
		count, loadVMs        int
		took                  time.Duration
		apiHeap, ctrlHeap     float64
		apiPerVMI, ctrlPerVMI float64
	}
	var rows []row
	made := 0
	for _, step := range steps {
		start := time.Now()
		createVMIs(t, vmis, made, step, 16)
		made = step
		lastLog := time.Now()
		err := wait.PollUntilContextTimeout(ctx, 2*time.Second, time.Duration(envInt("BENCH_SCALE_WAIT_MINUTES", 60))*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := vmis.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false, nil
			}
			phases := map[v1.VirtualMachineInstancePhase]int{}
			for _, v := range list.Items {
				phases[v.Status.Phase]++
			}
			if time.Since(lastLog) > 30*time.Second {
				t.Logf("instances by phase: %v", phases)
				lastLog = time.Now()
			}
			return phases[v1.Running] == step, nil
		})
		if err != nil {
			describeScale(t, c, ns)
		}
		require.NoError(t, err, "every instance Running")
		took := time.Since(start)
		settle()
		api, ctrl := measureMemory(t, virtAPI), controllerHeap(t, metricsAddr, controllerPid)
		// virt-api stores the load's VMs too: its heap is shared among all its objects.
		loadVMs, err := cl.typed.KubevirtV1().VirtualMachines("scale-load").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		require.NoError(t, err)
		rows = append(rows, row{count: step, loadVMs: len(loadVMs.Items), took: took, apiHeap: api.heap, ctrlHeap: ctrl.heap,
			apiPerVMI:  (api.heap - baseAPI.heap) / float64(step+len(loadVMs.Items)),
			ctrlPerVMI: (ctrl.heap - baseController.heap) / float64(step)})
		t.Logf("%d instances Running on %d nodes after %s", step, nodes, took.Round(time.Second))
	}
	stopLoad()
	load := <-loadDone

	fmt.Printf("\nControl plane at scale: %d KWOK nodes, instances in steps %v, virt-handler played by a stand-in\n", nodes, steps)
	fmt.Printf("%-10s %10s %12s %16s %16s %18s %18s\n", "instances", "load VMs", "to Running", "virt-api heap", "per object", "virt-controller", "per instance")
	for _, r := range rows {
		fmt.Printf("%-10d %10d %12s %13.1f MiB %13.1f KB %15.1f MiB %15.1f KB\n", r.count, r.loadVMs, r.took.Round(time.Second),
			r.apiHeap/(1<<20), r.apiPerVMI/1000, r.ctrlHeap/(1<<20), r.ctrlPerVMI/1000)
	}
	if len(rows) == 2 && rows[0].ctrlPerVMI > 0 {
		fmt.Printf("virt-controller per instance, %d against %d: %.2fx (target <= 1.2x); at %d: %.1f KB (target <= 20 KB)\n",
			rows[1].count, rows[0].count, rows[1].ctrlPerVMI/rows[0].ctrlPerVMI, rows[1].count, rows[1].ctrlPerVMI/1000)
	}
	fmt.Printf("API under a fixed load of %d VM creates/s and %d gets/s meanwhile: create p50 %s p99 %s, get p50 %s p99 %s, %d errors (SLO: mutating p99 <= 1 s)\n",
		rate, 2*rate, pct(load.creates, 50), pct(load.creates, 99), pct(load.gets, 50), pct(load.gets, 99), load.errors)
	fmt.Println("Heaps: virt-api's after a forced GC, per stored object (the instances and the load's VMs); virt-controller's live heap at its last GC, estimated from its heap goal (go_memstats_next_gc_bytes / 2 at GOGC=100).")
}

// describeScale logs what a stalled step looks like: a launcher pod and the nodes.
func describeScale(t *testing.T, c *framework.Cluster, ns string) {
	ctx := context.Background()
	if pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 2}); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s: node %q phase %s conditions %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
	}
	if nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 2}); err == nil {
		for _, n := range nodes.Items {
			t.Logf("node %s: taints %v conditions %+v allocatable %v", n.Name, n.Spec.Taints, n.Status.Conditions, n.Status.Allocatable)
		}
	}
}

// binaryFromEnv is the path an environment variable names (hack/bench/scale.sh builds them).
func binaryFromEnv(t *testing.T, name string) string {
	path := os.Getenv(name)
	if path == "" {
		t.Fatalf("%s must name a binary: run hack/bench/scale.sh", name)
	}
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	return abs
}

// runProcess starts a process logging to dir/name.log and stops it when the test ends.
func runProcess(t *testing.T, dir, name, binary string, args ...string) int {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	require.NoError(t, err)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start(), name)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			if tail, err := os.ReadFile(log.Name()); err == nil {
				t.Logf("%s's log ends with:\n%s", name, lastLines(string(tail), 30))
			}
		}
	})
	return cmd.Process.Pid
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

func freeAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// createFakeNode adds a node for KWOK to play, roomy enough for 110 launcher pods, with the
// devices virt-handler's device plugin advertises on a real node.
func createFakeNode(t *testing.T, c *framework.Cluster, name string) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods: resource.MustParse("110"), layout.KVMResource: resource.MustParse("1000"), layout.TunResource: resource.MustParse("1000")}
	_, err := c.Kube.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{fakeNodeAnnotation: "fake"},
			Labels: map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// A new node is created with the not-ready taint, which kube-controller-manager's node
	// lifecycle controller takes off once the node is Ready; there is none here, and KWOK's
	// node is Ready at once.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := c.Kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Spec.Taints = nil
		_, err = c.Kube.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
		return err
	}))
}

// handlerStandIn plays virt-handler's part in an instance's start, and only that: an instance
// Scheduled on a node whose launcher pod runs is reported Running. It is not virt-handler (no
// launcher, no guest); it makes the one status write per start that the handler makes.
func handlerStandIn(t *testing.T, c *framework.Cluster) (stop func()) {
	factory := externalversions.NewSharedInformerFactory(c.Hangar, 0)
	informer := factory.Kubevirt().V1().VirtualMachineInstances().Informer()
	queue := make(chan *v1.VirtualMachineInstance, 100000)
	var pending sync.Map
	enqueue := func(obj any) {
		if vmi, ok := obj.(*v1.VirtualMachineInstance); ok && vmi.Status.Phase == v1.Scheduled {
			if _, seen := pending.LoadOrStore(vmi.UID, true); !seen {
				queue <- vmi
			}
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var writes atomic.Int64
	for w := 0; w < 8; w++ {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case vmi := <-queue:
					if !launcherRunning(ctx, c, vmi) {
						time.Sleep(200 * time.Millisecond)
						queue <- vmi
						continue
					}
					update := vmi.DeepCopy()
					update.Status.Phase = v1.Running
					if _, err := c.Hangar.KubevirtV1().VirtualMachineInstances(vmi.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
						// A newer version came: the informer brings it back if it is still Scheduled.
						pending.Delete(vmi.UID)
						continue
					}
					writes.Add(1)
				}
			}
		}()
	}
	return func() {
		cancel()
		t.Logf("the virt-handler stand-in wrote %d statuses", writes.Load())
	}
}

// launcherRunning: the instance's launcher pod runs (KWOK set it so) on the instance's node.
func launcherRunning(ctx context.Context, c *framework.Cluster, vmi *v1.VirtualMachineInstance) bool {
	pods, err := c.Kube.CoreV1().Pods(vmi.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: v1.CreatedByLabel + "=" + string(vmi.UID), ResourceVersion: "0"})
	if err != nil {
		return false
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == vmi.Status.NodeName {
			return true
		}
	}
	return false
}

// createVMIs creates instances from..to-1 with workers clients.
func createVMIs(t *testing.T, vmis interface {
	Create(context.Context, *v1.VirtualMachineInstance, metav1.CreateOptions) (*v1.VirtualMachineInstance, error)
}, from, to, workers int) {
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range jobs {
				vm := typedVM(n)
				vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vmi-%05d", n), Labels: vm.Labels},
					Spec: vm.Spec.Template.Spec}
				if _, err := vmis.Create(context.Background(), vmi, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for n := from; n < to; n++ {
		jobs <- n
	}
	close(jobs)
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
}

// controllerHeap reads virt-controller's /metrics (plain HTTP on loopback): its live heap at
// the last GC, estimated from the heap goal, and its resident set from /proc.
func controllerHeap(t *testing.T, addr string, pid int) memory {
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	goal := metricSum(families, "go_memstats_next_gc_bytes", nil)
	require.NotZero(t, goal, "go_memstats_next_gc_bytes in virt-controller's /metrics")
	return memory{heap: goal / 2, rss: residentSet(t, pid)}
}

func residentSet(t *testing.T, pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			require.NoError(t, err)
			return kb * 1024
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}
