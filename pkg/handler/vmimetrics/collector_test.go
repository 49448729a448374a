package vmimetrics

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/launcher/api"
)

func target(name string, stats func(context.Context) (api.Stats, error)) Target {
	return Target{
		Name: name, Namespace: "tenant", UID: types.UID("uid-" + name), Phase: "Running", Interfaces: map[string]bool{"default": true}, Disks: map[string]bool{"root": true},
		VCPUs: 2, Stats: stats,
	}
}

func answer(s api.Stats) func(context.Context) (api.Stats, error) {
	return func(context.Context) (api.Stats, error) { return s, nil }
}

func newRegistry(t *testing.T, c *Collector) *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	for _, m := range c.Metrics() {
		require.NoError(t, reg.Register(m))
	}
	return reg
}

func TestCollectKubeVirtNames(t *testing.T) {
	c := New("node-a", func() []Target {
		return []Target{
			target("vm1", answer(api.Stats{
				UID: "uid-vm1", CPUTimeNanoseconds: ptr.To[uint64](2_500_000_000),
				VCPUs:      []api.VCPUStats{{ID: 0, State: "running", TimeNanoseconds: 1e9}},
				Memory:     api.MemoryStats{ResidentBytes: ptr.To[uint64](100 << 20), DomainBytes: ptr.To[uint64](128 << 20)},
				Interfaces: []api.InterfaceStats{{Name: "default", RxBytes: 1000, RxPackets: 10, TxBytes: 2000, TxPackets: 20}},
				Disks:      []api.DiskStats{{Name: "root", ReadBytes: 4096, ReadRequests: 1, WriteBytes: 8192, WriteRequests: 2}},
			})),
			{Name: "vm2", Namespace: "tenant", UID: "uid-vm2", Phase: "Scheduled"},
		}
	})
	reg := newRegistry(t, c)
	expected := `
# HELP kubevirt_vmi_cpu_usage_seconds_total Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).
# TYPE kubevirt_vmi_cpu_usage_seconds_total counter
kubevirt_vmi_cpu_usage_seconds_total{name="vm1",namespace="tenant",node="node-a"} 2.5
# HELP kubevirt_vmi_info Information about VirtualMachineInstances.
# TYPE kubevirt_vmi_info gauge
kubevirt_vmi_info{name="vm1",namespace="tenant",node="node-a",phase="running"} 1
kubevirt_vmi_info{name="vm2",namespace="tenant",node="node-a",phase="scheduled"} 1
# HELP kubevirt_vmi_memory_domain_bytes The amount of memory in bytes allocated to the domain.
# TYPE kubevirt_vmi_memory_domain_bytes gauge
kubevirt_vmi_memory_domain_bytes{name="vm1",namespace="tenant",node="node-a"} 1.34217728e+08
# HELP kubevirt_vmi_memory_resident_bytes Resident set size of the process running the domain.
# TYPE kubevirt_vmi_memory_resident_bytes gauge
kubevirt_vmi_memory_resident_bytes{name="vm1",namespace="tenant",node="node-a"} 1.048576e+08
# HELP kubevirt_vmi_network_receive_bytes_total Total network traffic received in bytes.
# TYPE kubevirt_vmi_network_receive_bytes_total counter
kubevirt_vmi_network_receive_bytes_total{interface="default",name="vm1",namespace="tenant",node="node-a"} 1000
# HELP kubevirt_vmi_network_transmit_packets_total Total network traffic transmitted packets.
# TYPE kubevirt_vmi_network_transmit_packets_total counter
kubevirt_vmi_network_transmit_packets_total{interface="default",name="vm1",namespace="tenant",node="node-a"} 20
# HELP kubevirt_vmi_storage_iops_write_total Total number of I/O write operations.
# TYPE kubevirt_vmi_storage_iops_write_total counter
kubevirt_vmi_storage_iops_write_total{drive="root",name="vm1",namespace="tenant",node="node-a"} 2
# HELP kubevirt_vmi_storage_read_traffic_bytes_total Total number of bytes read from storage.
# TYPE kubevirt_vmi_storage_read_traffic_bytes_total counter
kubevirt_vmi_storage_read_traffic_bytes_total{drive="root",name="vm1",namespace="tenant",node="node-a"} 4096
# HELP kubevirt_vmi_vcpu_seconds_total Total amount of time spent in each state by each vcpu (cpu_time excluding hypervisor time).
# TYPE kubevirt_vmi_vcpu_seconds_total counter
kubevirt_vmi_vcpu_seconds_total{id="0",name="vm1",namespace="tenant",node="node-a",state="running"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected),
		"kubevirt_vmi_cpu_usage_seconds_total", "kubevirt_vmi_info", "kubevirt_vmi_memory_domain_bytes",
		"kubevirt_vmi_memory_resident_bytes", "kubevirt_vmi_network_receive_bytes_total",
		"kubevirt_vmi_network_transmit_packets_total", "kubevirt_vmi_storage_iops_write_total",
		"kubevirt_vmi_storage_read_traffic_bytes_total", "kubevirt_vmi_vcpu_seconds_total"))
	n, err := testutil.GatherAndCount(reg, "kubevirt_vmi_memory_available_bytes")
	require.NoError(t, err)
	assert.Zero(t, n, "no balloon figure, no series")
}

// TestHostileLaunchersAddNoSeries: what a tenant's launcher answers cannot name another
// instance, add devices or vCPUs, or duplicate series; an answer about another instance is
// dropped whole and counted.
func TestHostileLaunchersAddNoSeries(t *testing.T) {
	hostile := api.Stats{
		UID:                "uid-evil",
		CPUTimeNanoseconds: ptr.To[uint64](1e9),
		VCPUs: []api.VCPUStats{
			{ID: 0, State: "running", TimeNanoseconds: 1}, {ID: 0, State: "blocked", TimeNanoseconds: 2}, // duplicate id
			{ID: 1, State: `x",namespace="kube-system`, TimeNanoseconds: 3}, // a label injection
			{ID: 4000000000, State: "running", TimeNanoseconds: 4},          // beyond the spec's vCPUs
		},
		Interfaces: []api.InterfaceStats{{Name: "default", RxBytes: 1}, {Name: "default", RxBytes: 2}, {Name: "eth9"},
			{Name: strings.Repeat("x", 1<<16)}},
		Disks: []api.DiskStats{{Name: "root", ReadBytes: 1}, {Name: "../../etc"}, {Name: "root", ReadBytes: 5}},
	}
	impostor := hostile
	impostor.UID = "uid-victim" // claims to be another instance
	c := New("node-a", func() []Target {
		return []Target{target("evil", answer(hostile)), target("liar", answer(impostor))}
	})
	reg := newRegistry(t, c)
	families, err := reg.Gather()
	require.NoError(t, err, "no duplicate or malformed series")
	perMetric := map[string]int{}
	for _, f := range families {
		for _, m := range f.Metric {
			perMetric[f.GetName()]++
			for _, l := range m.Label {
				switch l.GetName() {
				case "name":
					assert.Contains(t, []string{"evil", "liar"}, l.GetValue())
				case "namespace":
					assert.Equal(t, "tenant", l.GetValue())
				case "interface":
					assert.Equal(t, "default", l.GetValue())
				case "drive":
					assert.Equal(t, "root", l.GetValue())
				case "id":
					assert.Equal(t, "0", l.GetValue())
				}
			}
		}
	}
	assert.Equal(t, 1, perMetric["kubevirt_vmi_cpu_usage_seconds_total"], "only evil's own answer counts")
	assert.Equal(t, 1, perMetric["kubevirt_vmi_vcpu_seconds_total"])
	assert.Equal(t, 1, perMetric["kubevirt_vmi_network_receive_bytes_total"])
	assert.Equal(t, 1, perMetric["kubevirt_vmi_storage_read_traffic_bytes_total"])
	assert.Equal(t, 2, perMetric["kubevirt_vmi_info"])
	assert.Equal(t, 1.0, testutil.ToFloat64(c.failures.WithLabelValues("invalid")))
}

// TestSlowLaunchersDoNotHoldTheScrape: a launcher that never answers is given up at the
// deadline, counted, and the others are still reported.
func TestSlowLaunchersDoNotHoldTheScrape(t *testing.T) {
	hang := func(ctx context.Context) (api.Stats, error) { <-ctx.Done(); return api.Stats{}, ctx.Err() }
	c := New("node-a", func() []Target {
		return []Target{target("stuck1", hang), target("stuck2", hang),
			target("ok", answer(api.Stats{UID: "uid-ok", CPUTimeNanoseconds: ptr.To[uint64](1)}))}
	})
	c.Timeout = 200 * time.Millisecond
	reg := newRegistry(t, c)
	start := time.Now()
	n, err := testutil.GatherAndCount(reg, "kubevirt_vmi_cpu_usage_seconds_total")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, 1, n)
	assert.Equal(t, 2.0, testutil.ToFloat64(c.failures.WithLabelValues("timeout")))
}

// TestScrapesShareAnswers: scrapes within MinInterval, concurrent or not, ask each launcher
// once.
func TestScrapesShareAnswers(t *testing.T) {
	var asked atomic.Int32
	slow := func(context.Context) (api.Stats, error) {
		asked.Add(1)
		time.Sleep(50 * time.Millisecond)
		return api.Stats{UID: "uid-vm"}, nil
	}
	c := New("node-a", func() []Target { return []Target{target("vm", slow)} })
	c.MinInterval = time.Hour
	reg := newRegistry(t, c)
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() { defer wg.Done(); _, err := reg.Gather(); assert.NoError(t, err) }()
	}
	wg.Wait()
	_, err := reg.Gather()
	require.NoError(t, err)
	assert.Equal(t, int32(1), asked.Load())

	c.MinInterval = 0
	_, err = reg.Gather()
	require.NoError(t, err)
	assert.Equal(t, int32(2), asked.Load(), "a stale cache is refreshed")
}

// A migration out of the node shows its progress while it runs; a target's view or an ended
// migration shows none.
func TestMigrationProgress(t *testing.T) {
	now := time.Now()
	progress := api.Migration{
		UID: "m1", Role: api.MigrationSource, StartedAt: &now,
		DataTotalBytes: 1000, DataProcessedBytes: 600, DataRemainingBytes: 400, MemoryBytesPerSecond: 50, DirtyRateBytesPerSecond: 7,
	}
	ended, incoming := progress, progress
	ended.EndedAt, ended.Completed = &now, true
	incoming.Role = api.MigrationTarget
	migrating := func(name string, m api.Migration) Target {
		t := target(name, nil)
		t.Migration = &m
		return t
	}
	c := New("node-a", func() []Target {
		return []Target{migrating("out", progress), migrating("done", ended), migrating("in", incoming)}
	})
	reg := newRegistry(t, c)
	expected := `
# HELP kubevirt_vmi_migration_data_processed_bytes The total Guest OS data processed and migrated to the new VM.
# TYPE kubevirt_vmi_migration_data_processed_bytes gauge
kubevirt_vmi_migration_data_processed_bytes{name="out",namespace="tenant",node="node-a"} 600
# HELP kubevirt_vmi_migration_data_remaining_bytes The remaining guest OS data to be migrated to the new VM.
# TYPE kubevirt_vmi_migration_data_remaining_bytes gauge
kubevirt_vmi_migration_data_remaining_bytes{name="out",namespace="tenant",node="node-a"} 400
# HELP kubevirt_vmi_migration_data_total_bytes The total Guest OS data to be migrated to the new VM.
# TYPE kubevirt_vmi_migration_data_total_bytes gauge
kubevirt_vmi_migration_data_total_bytes{name="out",namespace="tenant",node="node-a"} 1000
# HELP kubevirt_vmi_migration_dirty_memory_rate_bytes The rate of memory being dirty in the Guest OS.
# TYPE kubevirt_vmi_migration_dirty_memory_rate_bytes gauge
kubevirt_vmi_migration_dirty_memory_rate_bytes{name="out",namespace="tenant",node="node-a"} 7
# HELP kubevirt_vmi_migration_memory_transfer_rate_bytes The rate at which the memory is being transferred.
# TYPE kubevirt_vmi_migration_memory_transfer_rate_bytes gauge
kubevirt_vmi_migration_memory_transfer_rate_bytes{name="out",namespace="tenant",node="node-a"} 50
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(expected),
		"kubevirt_vmi_migration_data_total_bytes", "kubevirt_vmi_migration_data_processed_bytes", "kubevirt_vmi_migration_data_remaining_bytes",
		"kubevirt_vmi_migration_memory_transfer_rate_bytes", "kubevirt_vmi_migration_dirty_memory_rate_bytes"))
}
