//go:build e2e && bench

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestDensityFigures is KubeVirt's density test on the local cluster: BENCH_DENSITY (100)
// instances created BENCH_DENSITY_GAP_MS (100) ms apart, and as many plain pods at the same
// pace on the same cluster before them. It prints, for both, the P50 and P95 of creation →
// Running (and for the first BENCH_DENSITY_BANNERS (0) instances → the guest's banner on its
// console: under TCG on two cores, 100 guests booting at once do not reach their banners in
// ten minutes, their kernels reporting soft lockups, so it is for hosts with KVM; at most 16,
// the streams one user may hold), and deletion → gone
// (deleted at the same pace), with the target beside them; and the writes to
// virtualmachineinstances per launcher pod created, from virt-api's own request counters, beside
// KubeVirt's thresholds (PATCH ≤ 2, PUT ≤ 10 per pod create). Times are the test's, from one
// watch each on instances and pods. hack/bench/density.sh runs it. A benchmark: it fails only
// on errors; it stops creating (and says so) if the host's available memory falls below
// BENCH_DENSITY_MIN_FREE_MIB (2048), so that it never takes the machine down.
func TestDensityFigures(t *testing.T) {
	n := benchEnv("BENCH_DENSITY", 100)
	banners := benchCount("BENCH_DENSITY_BANNERS", 0)
	gap := time.Duration(benchEnv("BENCH_DENSITY_GAP_MS", 100)) * time.Millisecond
	minFree := int64(benchEnv("BENCH_DENSITY_MIN_FREE_MIB", 2048)) << 20
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	ns := namespace(t, "bench-density")
	waitForDefaultServiceAccount(t, ns)
	token := serviceAccountToken(t, ns, "prometheus", true)
	fmt.Printf("\ndensity: %d of each, created %v apart, on %d nodes\n", n, gap, len(nodes.Items))

	pods := runDensity(t, ns, n, gap, minFree, podSubject{ns: ns, image: launcherImage(t)})
	pods.print("pods")

	before := vmiWrites(t, token)
	vmis := runDensity(t, ns, n, gap, minFree, vmiSubject{ns: ns, banners: banners})
	after := vmiWrites(t, token)
	vmis.print("VMIs")

	_, p95Pods := quantiles(pods.running)
	_, p95VMIs := quantiles(vmis.running)
	fmt.Printf("\ndensity: VMIs' Running P95 %.2fs against the pods' %.2fs + 0.5 s (target: <=; %s)\n",
		p95VMIs.Seconds(), p95Pods.Seconds(), met(p95VMIs <= p95Pods+500*time.Millisecond))
	podCreates := after.podCreates - before.podCreates
	if podCreates > 0 {
		patches := (after.patches - before.patches) / podCreates
		puts := (after.puts - before.puts) / podCreates
		fmt.Printf("density: writes to virtualmachineinstances per launcher pod created (%.0f pods): PATCH %.2f (KubeVirt's threshold <= 2: %s), PUT %.2f (<= 10: %s)\n",
			podCreates, patches, met(patches <= 2), puts, met(puts <= 10))
	}
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// densitySubject is what the density test creates: pods or instances.
type densitySubject interface {
	create(ctx context.Context, name string) error
	delete(ctx context.Context, name string) error
	// watch reports each object's name when it first runs and when it is gone.
	watch(ctx context.Context) (watch.Interface, error)
	running(obj any) (name string, ok bool)
	// banner says whether to wait for the guest's banner once the i-th subject runs.
	banner(i int) bool
}

type densityFigures struct {
	running, banner, gone []time.Duration
	stopped               string // why creation stopped early, if it did
}

func (f densityFigures) print(what string) {
	if f.stopped != "" {
		fmt.Printf("density %s: %s\n", what, f.stopped)
	}
	p50, p95 := quantiles(f.running)
	fmt.Printf("density %s: creation -> Running P50 %.2fs P95 %.2fs (n=%d)\n", what, p50.Seconds(), p95.Seconds(), len(f.running))
	if len(f.banner) > 0 {
		p50, p95 = quantiles(f.banner)
		fmt.Printf("density %s: creation -> banner P50 %.2fs P95 %.2fs\n", what, p50.Seconds(), p95.Seconds())
	}
	p50, p95 = quantiles(f.gone)
	fmt.Printf("density %s: deletion -> gone P50 %.2fs P95 %.2fs\n", what, p50.Seconds(), p95.Seconds())
}

// runDensity creates n subjects gap apart, waits until each runs (and printed its banner), then
// deletes them gap apart and waits until each is gone.
func runDensity(t *testing.T, ns string, n int, gap time.Duration, minFree int64, s densitySubject) densityFigures {
	ctx := context.Background()
	w, err := s.watch(ctx)
	require.NoError(t, err)
	defer w.Stop()

	var mu sync.Mutex
	created, deleted := map[string]time.Time{}, map[string]time.Time{}
	var figures densityFigures
	runningCh, goneCh := make(chan string, n), make(chan string, n)
	seen := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			now := time.Now()
			if ev.Type == watch.Deleted {
				name, _ := s.running(ev.Object) // the name, whatever the phase
				mu.Lock()
				if at, ok := deleted[name]; ok {
					figures.gone = append(figures.gone, now.Sub(at))
					goneCh <- name
				}
				mu.Unlock()
				continue
			}
			name, ok := s.running(ev.Object)
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			mu.Lock()
			if at, ok := created[name]; ok {
				figures.running = append(figures.running, now.Sub(at))
				runningCh <- name
			}
			mu.Unlock()
		}
	}()

	var banners sync.WaitGroup
	var bannerErrs []error
	made := 0
	for i := 0; i < n; i++ {
		if free := availableMemory(t); free < minFree {
			figures.stopped = fmt.Sprintf("stopped creating at %d: the host has %d MiB available (BENCH_DENSITY_MIN_FREE_MIB)", i, free>>20)
			break
		}
		name := fmt.Sprintf("d-%d", i)
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
		require.NoError(t, s.create(ctx, name))
		made++
		time.Sleep(gap)
	}
	for i := 0; i < made; i++ {
		select {
		case name := <-runningCh:
			var index int
			_, _ = fmt.Sscanf(name, "d-%d", &index)
			if s.banner(index) {
				banners.Add(1)
				go func() {
					defer banners.Done()
					err := waitBanner(ctx, ns, name, 600*time.Second)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						bannerErrs = append(bannerErrs, err)
						return
					}
					figures.banner = append(figures.banner, time.Since(created[name]))
				}()
			}
		case <-time.After(10 * time.Minute):
			require.FailNow(t, "not every subject runs", "%d of %d", i, made)
		}
	}
	banners.Wait()
	require.Empty(t, bannerErrs)

	for i := 0; i < made; i++ {
		name := fmt.Sprintf("d-%d", i)
		mu.Lock()
		deleted[name] = time.Now()
		mu.Unlock()
		require.NoError(t, s.delete(ctx, name))
		time.Sleep(gap)
	}
	for i := 0; i < made; i++ {
		select {
		case <-goneCh:
		case <-time.After(10 * time.Minute):
			require.FailNow(t, "not every subject is gone", "%d of %d", i, made)
		}
	}
	untilGone(t, ns)
	mu.Lock()
	defer mu.Unlock()
	return figures
}

// podSubject: plain pods of the launcher's image, sleeping, with the instances' small CPU
// request, meeting Pod Security restricted.
type podSubject struct{ ns, image string }

func (p podSubject) create(ctx context.Context, name string) error {
	_, err := kube.CoreV1().Pods(p.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "density"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](107),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "sleep", Image: p.image, ImagePullPolicy: corev1.PullIfNotPresent,
				// Ends at SIGTERM, as a guest shut down does: a pod's deletion is not its grace period.
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("25m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}, metav1.CreateOptions{})
	return err
}

func (p podSubject) delete(ctx context.Context, name string) error {
	return kube.CoreV1().Pods(p.ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (p podSubject) watch(ctx context.Context) (watch.Interface, error) {
	return kube.CoreV1().Pods(p.ns).Watch(ctx, metav1.ListOptions{LabelSelector: "bench=density"})
}

func (podSubject) running(obj any) (string, bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return "", false
	}
	return pod.Name, pod.Status.Phase == corev1.PodRunning
}

func (podSubject) banner(int) bool { return false }

// vmiSubject: the test guest, with 25m of CPU (three two-core nodes hold 100 launcher pods
// only with a small request) and 96 MiB of memory, the least it boots in (the host holds 100
// QEMUs).
type vmiSubject struct {
	ns      string
	banners int
}

func (v vmiSubject) create(ctx context.Context, name string) error {
	spec := guestSpec()
	spec.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("25m")
	spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("96Mi")
	_, err := hangar.KubevirtV1().VirtualMachineInstances(v.ns).Create(ctx, &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
	return err
}

func (v vmiSubject) delete(ctx context.Context, name string) error {
	return hangar.KubevirtV1().VirtualMachineInstances(v.ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (v vmiSubject) watch(ctx context.Context) (watch.Interface, error) {
	return hangar.KubevirtV1().VirtualMachineInstances(v.ns).Watch(ctx, metav1.ListOptions{})
}

func (vmiSubject) running(obj any) (string, bool) {
	vmi, ok := obj.(*v1.VirtualMachineInstance)
	if !ok {
		return "", false
	}
	return vmi.Name, vmi.Status.Phase == v1.Running
}

func (v vmiSubject) banner(i int) bool { return i < v.banners }

// apiWrites are counters of the API's requests: writes to virtualmachineinstances (every
// subresource) that virt-api served, and pods kube-apiserver created.
type apiWrites struct {
	patches, puts, podCreates float64
}

// vmiWrites reads virt-api's apiserver_request_total (every replica, with the metrics reader's
// token) and kube-apiserver's, as the test's admin.
func vmiWrites(t *testing.T, token string) apiWrites {
	t.Helper()
	var w apiWrites
	for _, p := range componentPods(t, "virt-api") {
		status, body, err := getMetrics(p.Status.PodIP, token)
		require.NoError(t, err)
		require.Equal(t, 200, status, body)
		w.patches += requestCount(body, `resource="virtualmachineinstances"`, `verb="PATCH"`) +
			requestCount(body, `resource="virtualmachineinstances"`, `verb="APPLY"`)
		w.puts += requestCount(body, `resource="virtualmachineinstances"`, `verb="PUT"`)
	}
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	require.NoError(t, err)
	w.podCreates = requestCount(string(body), `resource="pods"`, `verb="POST"`, `subresource=""`, `code="201"`)
	return w
}

// requestCount sums apiserver_request_total over the series whose labels include every one
// of labels.
func requestCount(body string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		set, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		all := true
		for _, l := range labels {
			if !strings.Contains(","+set+",", ","+l+",") {
				all = false
				break
			}
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); all && err == nil {
			sum += v
		}
	}
	return sum
}

// availableMemory is the host's MemAvailable, in bytes.
func availableMemory(t *testing.T) int64 {
	t.Helper()
	available, ok := hostMemory(t)["MemAvailable"]
	require.True(t, ok, "no MemAvailable in /proc/meminfo")
	return available
}
