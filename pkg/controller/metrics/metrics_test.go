package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
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
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="0.1"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="0.25"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="0.5"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="1"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="2"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="5"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="10"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="20"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="30"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="60"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="120"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="300"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="600"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="1200"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="3600"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Pending",le="+Inf"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_sum{phase="Pending"} 0.2
kubevirt_vmi_phase_transition_time_from_creation_seconds_count{phase="Pending"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="0.1"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="0.25"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="0.5"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="1"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="2"} 0
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="5"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="10"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="20"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="30"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="60"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="120"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="300"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="600"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="1200"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="3600"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="+Inf"} 1
kubevirt_vmi_phase_transition_time_from_creation_seconds_sum{phase="Scheduling"} 3
kubevirt_vmi_phase_transition_time_from_creation_seconds_count{phase="Scheduling"} 1
`
	require.NoError(t, testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"kubevirt_vmi_phase_transition_time_from_creation_seconds"))
}
