package metrics

import (
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
)

// Listers are the caches the cluster-wide metrics are computed from at each scrape.
type Listers struct {
	VMIs kvlisters.VirtualMachineInstanceLister
	VMs  kvlisters.VirtualMachineLister
}

var listers atomic.Pointer[Listers]

// SetListers gives the collectors the leader's caches; nil (a replica that does not lead)
// makes them report nothing, so that only the leader's numbers are summed.
func SetListers(l *Listers) { listers.Store(l) }

var (
	vmiPhaseCount = prometheus.NewDesc("kubevirt_vmi_phase_count",
		"Sum of VMIs per phase and node.", []string{"node", "phase"}, nil)
	vmInfo = prometheus.NewDesc("kubevirt_vm_info",
		"Information about Virtual Machines.", []string{"name", "namespace", "status", "status_group"}, nil)
)

// cacheCollector computes the cluster-wide metrics from the leader's caches at each scrape:
// nothing to keep in step, and a scrape costs one pass over the cached objects.
type cacheCollector struct{}

func (cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- vmiPhaseCount
	ch <- vmInfo
}

func (cacheCollector) Collect(ch chan<- prometheus.Metric) {
	l := listers.Load()
	if l == nil {
		return
	}
	if vmis, err := l.VMIs.List(labels.Everything()); err != nil {
		klog.ErrorS(err, "list instances for metrics")
	} else {
		type key struct{ node, phase string }
		counts := map[key]float64{}
		for _, vmi := range vmis {
			counts[key{vmi.Status.NodeName, phaseLabel(vmi.Status.Phase)}]++
		}
		for k, n := range counts {
			ch <- prometheus.MustNewConstMetric(vmiPhaseCount, prometheus.GaugeValue, n, k.node, k.phase)
		}
	}
	if vms, err := l.VMs.List(labels.Everything()); err != nil {
		klog.ErrorS(err, "list virtual machines for metrics")
	} else {
		for _, vm := range vms {
			status := vm.Status.PrintableStatus
			if status == "" {
				status = v1.VirtualMachineStatusStopped
			}
			ch <- prometheus.MustNewConstMetric(vmInfo, prometheus.GaugeValue, 1,
				vm.Name, vm.Namespace, strings.ToLower(string(status)), statusGroup(status))
		}
	}
}

// phaseLabel is the phase as KubeVirt's metrics spell it: lower case.
func phaseLabel(p v1.VirtualMachineInstancePhase) string {
	if p == v1.VmPhaseUnset {
		return "unknown"
	}
	return strings.ToLower(string(p))
}

// statusGroup sorts a VM's printable status into KubeVirt's groups, which alerts use.
func statusGroup(s v1.VirtualMachinePrintableStatus) string {
	switch s {
	case v1.VirtualMachineStatusRunning:
		return "running"
	case v1.VirtualMachineStatusProvisioning, v1.VirtualMachineStatusStarting:
		return "starting"
	case v1.VirtualMachineStatusMigrating:
		return "migrating"
	case v1.VirtualMachineStatusStopped, v1.VirtualMachineStatusPaused, v1.VirtualMachineStatusStopping, v1.VirtualMachineStatusTerminating:
		return "non_running"
	}
	return "error" // ErrorUnschedulable, ErrorPvcNotFound, CrashLoopBackOff, Unknown, ...
}

func registerCollectors() {
	legacyregistry.RawMustRegister(cacheCollector{})
}
