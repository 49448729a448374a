//go:build bench

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/hangarvm/hangar/test/integration/framework"
)

// direct is the admin talking to virt-api itself (its client certificate is of the cluster CA,
// which virt-api trusts through kube-apiserver's extension-apiserver-authentication): for
// /metrics and /debug/pprof, which kube-apiserver does not proxy.
func direct(t testing.TB, c *framework.Cluster) rest.Interface {
	cfg := rest.CopyConfig(c.Admin)
	cfg.Host = c.VirtAPI.URL()
	cfg.TLSClientConfig.ServerName = "localhost"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(cfg)
	require.NoError(t, err)
	return client
}

// metrics reads a server's /metrics.
func metrics(t testing.TB, client rest.Interface) map[string]*dto.MetricFamily {
	raw, err := client.Get().AbsPath("/metrics").DoRaw(context.Background())
	require.NoError(t, err)
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	require.NoError(t, err)
	return families
}

// metricSum adds up the counters or gauges of a family whose labels include labels.
func metricSum(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	family, ok := families[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range family.GetMetric() {
		matched := 0
		for _, l := range m.GetLabel() {
			if want, ok := labels[l.GetName()]; ok && want == l.GetValue() {
				matched++
			}
		}
		if matched != len(labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum
}

// memory is virt-api's memory: the Go heap in use after a forced garbage collection, and the
// resident set the kernel counts (what a memory limit applies to).
type memory struct{ heap, rss float64 }

func measureMemory(t testing.TB, client rest.Interface) memory {
	// A heap profile with gc=1 collects first, so the heap figures below are live objects.
	_, err := client.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(context.Background())
	require.NoError(t, err)
	families := metrics(t, client)
	m := memory{heap: metricSum(families, "go_memstats_heap_inuse_bytes", nil),
		rss: metricSum(families, "process_resident_memory_bytes", nil)}
	require.NotZero(t, m.heap, "go_memstats_heap_inuse_bytes in virt-api's /metrics")
	require.NotZero(t, m.rss, "process_resident_memory_bytes in virt-api's /metrics")
	return m
}

// listSources counts the objects a server's lists of a resource returned from its watch
// cache and from etcd. A list served from etcd reads and decodes every object again; the
// lists a consistent read makes to learn etcd's current revision return one object each.
func listSources(t testing.TB, client rest.Interface, group, resource string) (cache, etcd float64) {
	families := metrics(t, client)
	labels := map[string]string{"group": group, "resource": resource}
	return metricSum(families, "apiserver_cache_list_returned_objects_total", labels),
		metricSum(families, "apiserver_storage_list_returned_objects_total", labels)
}

// profiler takes CPU and allocation profiles of virt-api and of kube-apiserver during the first
// seconds of each row (its creates), into $BENCH_PROFILE_DIR as <server>-row<N>.pprof and
// <server>-row<N>-allocs.pprof; nothing without it. kube-apiserver's profile is the other
// half of an aggregated create (authentication, the proxy) and the whole of a CRD's.
type profiler struct {
	t       testing.TB
	servers map[string]rest.Interface
	dir     string
	done    chan error
}

// profileSeconds is short enough to see creates only: a row of 5,000 takes longer.
const profileSeconds = 6

// profileDir is where profiles go; framework.KubeAPIServerProfiling must be set before the
// cluster starts.
func profileDir() string { return os.Getenv("BENCH_PROFILE_DIR") }

func startProfile(t testing.TB, c *framework.Cluster) *profiler {
	if dir := profileDir(); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	return &profiler{t: t, dir: profileDir(), servers: map[string]rest.Interface{
		"virt-api":       direct(t, c),
		"kube-apiserver": c.Kube.Discovery().RESTClient(),
	}}
}

func (p *profiler) begin(row int) {
	if p.dir == "" {
		return
	}
	p.done = make(chan error, len(p.servers)*len(profiles))
	for name, client := range p.servers {
		for profile, suffix := range profiles {
			go func() {
				raw, err := client.Get().AbsPath("/debug/pprof/"+profile).Param("seconds", strconv.Itoa(profileSeconds)).
					Timeout(time.Minute).DoRaw(context.Background())
				if err == nil {
					err = os.WriteFile(filepath.Join(p.dir, fmt.Sprintf("%s-row%d%s.pprof", name, row, suffix)), raw, 0o644)
				}
				if err != nil {
					err = fmt.Errorf("%s profile of %s: %w", profile, name, err)
				}
				p.done <- err
			}()
		}
	}
}

// profiles are the pprof endpoints taken over the same seconds, with their file names' suffix:
// CPU, and the allocations made meanwhile (what the garbage collector then has to chase).
var profiles = map[string]string{"profile": "", "allocs": "-allocs"}

func (p *profiler) end() {
	if p.dir == "" {
		return
	}
	for range cap(p.done) {
		require.NoError(p.t, <-p.done)
	}
}
