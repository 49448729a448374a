package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	kvlisters "github.com/hangarvm/hangar/pkg/generated/listers/kubevirt/v1"
)

func TestObservePhaseTransition(t *testing.T) {
	Register()
	VMIPhaseTransitionFromCreation.Reset()
	created := time.Now().Add(-time.Minute)
	vmi := func(phase v1.VirtualMachineInstancePhase, after time.Duration) *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
			Status: v1.VirtualMachineInstanceStatus{Phase: phase, PhaseTransitionTimestamps: []v1.VirtualMachineInstancePhaseTransitionTimestamp{
				{Phase: phase, PhaseTransitionTimestamp: metav1.NewTime(created.Add(after))},
			}},
		}
	}
	ObservePhaseTransition(nil, vmi(v1.VmPhaseUnset, 0))                              // no phase: ignored
	ObservePhaseTransition(nil, vmi(v1.Pending, 200*time.Millisecond))                // counted
	ObservePhaseTransition(vmi(v1.Pending, 0), vmi(v1.Pending, 200*time.Millisecond)) // same phase: ignored
	ObservePhaseTransition(vmi(v1.Pending, 0), vmi(v1.Scheduling, 3*time.Second))     // counted
	want := `
# HELP kubevirt_vmi_phase_transition_time_from_creation_seconds [ALPHA] Histogram of VM instance phase transitions duration from creation time in seconds.
# TYPE kubevirt_vmi_phase_transition_time_from_creation_seconds histogram
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="0.5"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="1"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="2"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="5"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="10"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="20"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="30"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="40"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="50"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="60"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="90"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="120"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="180"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="300"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="600"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="1200"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="1800"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="3600"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="+Inf"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_sum{phase="Pending"} 0.2
kubevirt_vmi_phase_transition_time_from_creation_seconds_count{phase="Pending"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="0.5"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="1"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="2"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="5"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="10"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="20"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="30"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="40"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="50"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="60"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="90"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="120"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="180"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="300"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="600"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="1200"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="1800"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="3600"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="+Inf"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_sum{phase="Scheduling"} 3
kubevirt_vmi_phase_transition_time_from_creation_seconds_count{phase="Scheduling"} 1
`
	require.NoError(t, testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"kubevirt_vmi_phase_transition_time_from_creation_seconds"))
}

// TestCacheMetrics: the phase counts and VM info come from the leader's caches at scrape
// time; a replica that does not lead reports none.
func TestCacheMetrics(t *testing.T) {
	Register()
	vmiIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	vmIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i, p := range []v1.VirtualMachineInstancePhase{v1.Running, v1.Running, v1.Scheduling} {
		node := "node-a"
		if p == v1.Scheduling {
			node = ""
		}
		require.NoError(t, vmiIndexer.Add(&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("vmi", i)},
			Status: v1.VirtualMachineInstanceStatus{Phase: p, NodeName: node}}))
	}
	for name, status := range map[string]v1.VirtualMachinePrintableStatus{"web": v1.VirtualMachineStatusRunning, "db": v1.VirtualMachineStatusUnschedulable, "new": ""} {
		require.NoError(t, vmIndexer.Add(&v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status: v1.VirtualMachineStatus{PrintableStatus: status}}))
	}
	SetListers(&Listers{VMIs: kvlisters.NewVirtualMachineInstanceLister(vmiIndexer), VMs: kvlisters.NewVirtualMachineLister(vmIndexer)})
	defer SetListers(nil)
	want := `
# HELP kubevirt_vm_info Information about Virtual Machines.
# TYPE kubevirt_vm_info gauge
kubevirt_vm_info{name="db",namespace="ns",status="errorunschedulable",status_group="error"} 1
kubevirt_vm_info{name="new",namespace="ns",status="stopped",status_group="non_running"} 1
kubevirt_vm_info{name="web",namespace="ns",status="running",status_group="running"} 1
# HELP kubevirt_vmi_phase_count Sum of VMIs per phase and node.
# TYPE kubevirt_vmi_phase_count gauge
kubevirt_vmi_phase_count{node="",phase="scheduling"} 1
kubevirt_vmi_phase_count{node="node-a",phase="running"} 2
`
	// client_golang's comparison: component-base's lints KubeVirt's name kubevirt_vmi_phase_count.
	require.NoError(t, promtestutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "kubevirt_vm_info", "kubevirt_vmi_phase_count"))

	SetListers(nil)
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, f := range families {
		assert.NotContains(t, []string{"kubevirt_vm_info", "kubevirt_vmi_phase_count"}, f.GetName())
	}
}
