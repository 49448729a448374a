//go:build bench

package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangarvm/hangar/test/integration/framework"
)

// latencies are one row's request latencies under the fixed load.
type latencies struct {
	creates, gets []time.Duration
	errors        int64
}

// TestAPILatency offers a fixed load, far below saturation, to Hangar's typed clientset and
// to the CRD in turn (BENCH_RUNS pairs, alternating): BENCH_RATE creates per second and twice
// as many gets of objects already made, for BENCH_SECONDS, each request on its own so that a
// slow answer does not lower the load (an open loop). Both etcds sync to disk, as in
// production. It prints p50 and p99 of creates and gets of each, and the ratios against the
// target: Hangar's p99 at most half the CRD's.
func TestAPILatency(t *testing.T) {
	rate, seconds, runs := envInt("BENCH_RATE", 20), envInt("BENCH_SECONDS", 60), envInt("BENCH_RUNS", 1)
	framework.EtcdFsync = true
	defer func() { framework.EtcdFsync = false }()
	c := framework.StartAggregatedProcess(t, virtAPIBinary(t), nil)
	cl := newClients(t, c)
	installCRD(t, c, cl.dynamic)

	rows := []api{apis[rowTyped], apis[rowCRD]}
	results := make([]latencies, len(rows))
	for run := 0; run < runs; run++ {
		for i, row := range rows {
			ns := fmt.Sprintf("latency-%d-%d", run, i)
			_, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			require.NoError(t, err)
			l := offerLoad(row.new(cl, ns), rate, time.Duration(seconds)*time.Second)
			results[i].creates = append(results[i].creates, l.creates...)
			results[i].gets = append(results[i].gets, l.gets...)
			results[i].errors += l.errors
			t.Logf("run %d, %s: %d creates, %d gets, %d errors", run+1, row.name, len(l.creates), len(l.gets), l.errors)
		}
	}

	fmt.Printf("\nAPI latency at a fixed load: %d creates/s and %d gets/s for %d s, %d runs per row, etcds syncing to disk\n",
		rate, 2*rate, seconds, runs)
	fmt.Printf("%-26s %10s %10s %10s %10s %7s\n", "", "create p50", "create p99", "get p50", "get p99", "errors")
	for i, row := range rows {
		r := results[i]
		fmt.Printf("%-26s %10s %10s %10s %10s %7d\n", row.name, pct(r.creates, 50), pct(r.creates, 99), pct(r.gets, 50), pct(r.gets, 99), r.errors)
	}
	hangar, crd := results[0], results[1]
	fmt.Printf("Hangar's p99 against the CRD's (target <= 0.5x): creates %.2fx, gets %.2fx\n",
		ratio(pct(hangar.creates, 99), pct(crd.creates, 99)), ratio(pct(hangar.gets, 99), pct(crd.gets, 99)))
	require.Zero(t, hangar.errors+crd.errors, "requests failed")
}

// offerLoad sends rate creates and 2×rate gets per second to tg for d, each on a goroutine of
// its own, and waits for the last answer.
func offerLoad(tg target, rate int, d time.Duration) latencies {
	ctx := context.Background()
	var (
		mu   sync.Mutex
		l    latencies
		wg   sync.WaitGroup
		made []int // the objects whose create has answered
		next atomic.Int64
	)
	record := func(list *[]time.Duration, start time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			l.errors++
			return
		}
		*list = append(*list, time.Since(start))
	}
	// A few objects first, so that gets have something to read from the start.
	for n := 0; n < 10; n++ {
		if err := tg.create(ctx, n); err == nil {
			made = append(made, n)
		}
	}
	next.Store(10)
	tick := time.NewTicker(time.Second / time.Duration(3*rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		wg.Add(1)
		if i%3 == 0 {
			n := int(next.Add(1) - 1)
			go func() {
				defer wg.Done()
				start := time.Now()
				err := tg.create(ctx, n)
				record(&l.creates, start, err)
				if err == nil {
					mu.Lock()
					made = append(made, n)
					mu.Unlock()
				}
			}()
			continue
		}
		mu.Lock()
		if len(made) == 0 {
			l.errors++ // nothing to read: every create so far failed
			mu.Unlock()
			wg.Done()
			continue
		}
		n := made[rand.IntN(len(made))]
		mu.Unlock()
		go func() {
			defer wg.Done()
			start := time.Now()
			record(&l.gets, start, tg.get(ctx, n))
		}()
	}
	wg.Wait()
	return l
}

// pct is the p-th percentile of d (nearest rank); 0 when d is empty.
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)].Round(100 * time.Microsecond)
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
