// Package vmimetrics is virt-handler's Prometheus collector of the instances on its node:
// KubeVirt's per-VMI metric names and labels, from each launcher's libvirt statistics.
//
// A scrape asks every running launcher at once, with one deadline for all (a slow or dead
// launcher is skipped and counted), and shares its answers with the scrapes that arrive
// within MinInterval: however often Prometheus (or several) scrapes, a launcher is asked at
// most once per interval, and a scrape never waits longer than Timeout for launchers.
//
// What a launcher answers is the tenant's word (whoever may exec into the launcher pod can
// answer in its place): labels come from the instance the handler knows, never from the
// answer; devices are reported only under the names the instance's spec gives them, each
// once; the answer must name the instance's UID. A launcher can misreport its own guest's
// figures, nothing more.
package vmimetrics

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// Target is one instance on the node.
type Target struct {
	Name, Namespace string
	UID             types.UID
	// Phase is the instance's status.phase.
	Phase string
	// Interfaces and Disks are the names in the instance's spec; VCPUs its vCPU count.
	Interfaces, Disks map[string]bool
	VCPUs             int
	// Stats asks the instance's launcher; nil when no guest runs.
	Stats func(ctx context.Context) (api.Stats, error)
	// Migration is the migration its launcher last reported, if any.
	Migration *api.Migration
}

// Source lists the instances on the node.
type Source func() []Target

// Defaults of a Collector.
const (
	DefaultTimeout     = time.Second
	DefaultMinInterval = time.Second
)

// Collector collects the per-VMI metrics.
type Collector struct {
	node   string
	source Source
	// Timeout bounds the launchers' answers in one scrape; MinInterval is how long answers
	// are reused.
	Timeout, MinInterval time.Duration

	failures *prometheus.CounterVec
	duration prometheus.Histogram

	mu       sync.Mutex
	gathered time.Time
	results  []result
	inflight chan struct{} // closed when the gathering under way ends
	now      func() time.Time
}

type result struct {
	target Target
	stats  *api.Stats // nil: not running, failed or refused
}

// New returns the collector of node's instances. Register it and Metrics() together.
func New(node string, source Source) *Collector {
	c := &Collector{
		node: node, source: source, Timeout: DefaultTimeout, MinInterval: DefaultMinInterval, now: time.Now,
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hangar_virt_handler_vmi_stats_failures_total",
			Help: "Launchers whose statistics a scrape went without, by reason: timeout (no answer in time), error (refused or unreachable), invalid (not about its instance).",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hangar_virt_handler_vmi_stats_duration_seconds",
			Help:    "How long gathering the launchers' statistics for a scrape took.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}),
	}
	for _, reason := range []string{"timeout", "error", "invalid"} {
		c.failures.WithLabelValues(reason) // zero from the start: rates and alerts see a series
	}
	return c
}

// Metrics are the collector's own metrics, to register beside it.
func (c *Collector) Metrics() []prometheus.Collector {
	return []prometheus.Collector{c.failures, c.duration}
}

// gather returns the launchers' answers, asking them if the last answers are older than
// MinInterval; concurrent calls share one round of questions.
func (c *Collector) gather(ctx context.Context) []result {
	for {
		c.mu.Lock()
		if !c.gathered.IsZero() && c.now().Sub(c.gathered) < c.MinInterval {
			r := c.results
			c.mu.Unlock()
			return r
		}
		if wait := c.inflight; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		done := make(chan struct{})
		c.inflight = done
		c.mu.Unlock()

		r := c.ask(ctx)

		c.mu.Lock()
		c.results, c.gathered, c.inflight = r, c.now(), nil
		c.mu.Unlock()
		close(done)
		return r
	}
}

// ask asks every running launcher at once, all under one deadline.
func (c *Collector) ask(ctx context.Context) []result {
	start := time.Now()
	defer func() { c.duration.Observe(time.Since(start).Seconds()) }()
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	targets := c.source()
	out := make([]result, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		out[i].target = t
		if t.Stats == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := t.Stats(ctx)
			switch {
			case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
				c.failures.WithLabelValues("timeout").Inc()
			case err != nil:
				var ce *api.CallError
				if !errors.As(err, &ce) || ce.Status != 409 { // 409: the guest just stopped
					c.failures.WithLabelValues("error").Inc()
				}
			case s.UID != string(t.UID):
				c.failures.WithLabelValues("invalid").Inc()
			default:
				out[i].stats = &s
			}
		}()
	}
	wg.Wait()
	return out
}

// Describe sends nothing: the set of series changes with the instances (an unchecked
// collector).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect gathers (or reuses) the launchers' answers and sends the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.gather(context.Background()) {
		t := r.target
		labels := []string{t.Name, t.Namespace, c.node}
		ch <- prometheus.MustNewConstMetric(vmiInfo, prometheus.GaugeValue, 1, append(labels, strings.ToLower(t.Phase))...)
		if r.stats != nil {
			emit(ch, t, labels, r.stats)
		}
		emitMigration(ch, labels, t.Migration)
	}
}
