package vmimetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// KubeVirt's names, units and labels: dashboards and alerts written for KubeVirt query these.
var (
	base = []string{"name", "namespace", "node"}

	vmiInfo = desc("kubevirt_vmi_info", "Information about VirtualMachineInstances.", "phase")

	cpuUsage = desc("kubevirt_vmi_cpu_usage_seconds_total", "Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).")
	vcpu     = desc("kubevirt_vmi_vcpu_seconds_total", "Total amount of time spent in each state by each vcpu (cpu_time excluding hypervisor time).", "id", "state")

	memResident  = desc("kubevirt_vmi_memory_resident_bytes", "Resident set size of the process running the domain.")
	memAvailable = desc("kubevirt_vmi_memory_available_bytes", "Amount of usable memory as seen by the domain (reported by the guest's balloon driver).")
	memDomain    = desc("kubevirt_vmi_memory_domain_bytes", "The amount of memory in bytes allocated to the domain.")

	netRxBytes   = desc("kubevirt_vmi_network_receive_bytes_total", "Total network traffic received in bytes.", "interface")
	netTxBytes   = desc("kubevirt_vmi_network_transmit_bytes_total", "Total network traffic transmitted in bytes.", "interface")
	netRxPackets = desc("kubevirt_vmi_network_receive_packets_total", "Total network traffic received packets.", "interface")
	netTxPackets = desc("kubevirt_vmi_network_transmit_packets_total", "Total network traffic transmitted packets.", "interface")
	netRxErrors  = desc("kubevirt_vmi_network_receive_errors_total", "Total network received error packets.", "interface")
	netTxErrors  = desc("kubevirt_vmi_network_transmit_errors_total", "Total network transmitted error packets.", "interface")
	netRxDropped = desc("kubevirt_vmi_network_receive_packets_dropped_total", "The total number of rx packets dropped on vNIC interfaces.", "interface")
	netTxDropped = desc("kubevirt_vmi_network_transmit_packets_dropped_total", "The total number of tx packets dropped on vNIC interfaces.", "interface")

	diskReadBytes  = desc("kubevirt_vmi_storage_read_traffic_bytes_total", "Total number of bytes read from storage.", "drive")
	diskWriteBytes = desc("kubevirt_vmi_storage_write_traffic_bytes_total", "Total number of written bytes.", "drive")
	diskReadIOPS   = desc("kubevirt_vmi_storage_iops_read_total", "Total number of I/O read operations.", "drive")
	diskWriteIOPS  = desc("kubevirt_vmi_storage_iops_write_total", "Total number of I/O write operations.", "drive")
	diskReadTime   = desc("kubevirt_vmi_storage_read_times_seconds_total", "Total time spent on read operations.", "drive")
	diskWriteTime  = desc("kubevirt_vmi_storage_write_times_seconds_total", "Total time spent on write operations.", "drive")
	diskFlushes    = desc("kubevirt_vmi_storage_flush_requests_total", "Total storage flush requests.", "drive")

	migDataTotal     = desc("kubevirt_vmi_migration_data_total_bytes", "The total Guest OS data to be migrated to the new VM.")
	migDataProcessed = desc("kubevirt_vmi_migration_data_processed_bytes", "The total Guest OS data processed and migrated to the new VM.")
	migDataRemaining = desc("kubevirt_vmi_migration_data_remaining_bytes", "The remaining guest OS data to be migrated to the new VM.")
	migMemoryRate    = desc("kubevirt_vmi_migration_memory_transfer_rate_bytes", "The rate at which the memory is being transferred.")
	migDirtyRate     = desc("kubevirt_vmi_migration_dirty_memory_rate_bytes", "The rate of memory being dirty in the Guest OS.")
)

func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string(nil), base...), extra...), nil)
}

// vcpuStates are the states a vCPU is reported in; others are dropped.
var vcpuStates = map[string]bool{"running": true, "blocked": true, "offline": true, "unknown": true}

// maxVCPUs bounds the vCPU series of one instance whatever its spec says.
const maxVCPUs = 512

// emit sends one instance's figures. Only devices its spec names, each once, and vCPUs below
// its vCPU count are sent: the launcher cannot add series or label values.
func emit(ch chan<- prometheus.Metric, t Target, labels []string, s *api.Stats) {
	counter := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append(labels, extra...)...)
	}
	gauge := func(d *prometheus.Desc, v *uint64) {
		if v != nil {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*v), labels...)
		}
	}
	if s.CPUTimeNanoseconds != nil {
		counter(cpuUsage, seconds(*s.CPUTimeNanoseconds))
	}
	seenVCPU := map[uint32]bool{}
	for _, v := range s.VCPUs {
		if int(v.ID) >= min(t.VCPUs, maxVCPUs) || seenVCPU[v.ID] || !vcpuStates[v.State] {
			continue
		}
		seenVCPU[v.ID] = true
		counter(vcpu, seconds(v.TimeNanoseconds), strconv.FormatUint(uint64(v.ID), 10), v.State)
	}
	gauge(memResident, s.Memory.ResidentBytes)
	gauge(memAvailable, s.Memory.AvailableBytes)
	gauge(memDomain, s.Memory.DomainBytes)

	seen := map[string]bool{}
	for _, n := range s.Interfaces {
		if !t.Interfaces[n.Name] || seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		counter(netRxBytes, float64(n.RxBytes), n.Name)
		counter(netTxBytes, float64(n.TxBytes), n.Name)
		counter(netRxPackets, float64(n.RxPackets), n.Name)
		counter(netTxPackets, float64(n.TxPackets), n.Name)
		counter(netRxErrors, float64(n.RxErrors), n.Name)
		counter(netTxErrors, float64(n.TxErrors), n.Name)
		counter(netRxDropped, float64(n.RxDropped), n.Name)
		counter(netTxDropped, float64(n.TxDropped), n.Name)
	}
	seen = map[string]bool{}
	for _, d := range s.Disks {
		if !t.Disks[d.Name] || seen[d.Name] {
			continue
		}
		seen[d.Name] = true
		counter(diskReadBytes, float64(d.ReadBytes), d.Name)
		counter(diskWriteBytes, float64(d.WriteBytes), d.Name)
		counter(diskReadIOPS, float64(d.ReadRequests), d.Name)
		counter(diskWriteIOPS, float64(d.WriteRequests), d.Name)
		counter(diskReadTime, seconds(d.ReadTimeNanoseconds), d.Name)
		counter(diskWriteTime, seconds(d.WriteTimeNanoseconds), d.Name)
		counter(diskFlushes, float64(d.FlushRequests), d.Name)
	}
}

// emitMigration sends the progress of a migration out of the instance's node, as its source
// launcher last reported it (libvirt's job statistics, every few seconds).
func emitMigration(ch chan<- prometheus.Metric, labels []string, m *api.Migration) {
	if m == nil || m.Role != api.MigrationSource || m.EndedAt != nil {
		return
	}
	for _, g := range []struct {
		d *prometheus.Desc
		v uint64
	}{
		{migDataTotal, m.DataTotalBytes}, {migDataProcessed, m.DataProcessedBytes}, {migDataRemaining, m.DataRemainingBytes},
		{migMemoryRate, m.MemoryBytesPerSecond}, {migDirtyRate, m.DirtyRateBytesPerSecond},
	} {
		ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, float64(g.v), labels...)
	}
}

func seconds(ns uint64) float64 { return float64(ns) / 1e9 }
