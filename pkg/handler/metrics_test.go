package handler

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/vmimetrics"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// TestMetricsFromTheLaunchersSocket: the collector reaches a running guest's launcher through
// the verified socket of its pod and labels its figures with the instance and this node.
func TestMetricsFromTheLaunchersSocket(t *testing.T) {
	vmi := scheduledVMI("m")
	vmi.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default"}}
	f := newFixture(t, vmi)
	startFakeLauncher(t, f.pods.socketDir(vmi), vmi.UID, api.State{})
	f.waitVMI(func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	require.Eventually(t, func() bool {
		for _, t := range f.c.MetricsTargets() {
			if t.Stats != nil {
				return true
			}
		}
		return false
	}, 5e9, 2e7, "the handler's cache sees the running guest")

	reg := prometheus.NewRegistry()
	reg.MustRegister(vmimetrics.New("node-a", f.c.MetricsTargets))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubevirt_vmi_cpu_usage_seconds_total Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).
# TYPE kubevirt_vmi_cpu_usage_seconds_total counter
kubevirt_vmi_cpu_usage_seconds_total{name="guest",namespace="ns",node="node-a"} 3
# HELP kubevirt_vmi_network_receive_bytes_total Total network traffic received in bytes.
# TYPE kubevirt_vmi_network_receive_bytes_total counter
kubevirt_vmi_network_receive_bytes_total{interface="default",name="guest",namespace="ns",node="node-a"} 100
`), "kubevirt_vmi_cpu_usage_seconds_total", "kubevirt_vmi_network_receive_bytes_total"))
}

// TestFailureSaysWhy: a failed start's reason and message reach status.reason and the
// Synchronized condition, the message cleaned of control characters and bounded.
func TestFailureSaysWhy(t *testing.T) {
	tests := []struct {
		name        string
		state       api.State
		wantMessage string
	}{
		{
			name:        "a containerDisk without a disk",
			state:       api.State{Phase: api.PhaseFailed, Reason: "ContainerDiskNotFound", Message: `containerDisk volume "root": image "x:1" holds no disk`},
			wantMessage: `containerDisk volume "root": image "x:1" holds no disk`,
		},
		{
			name:        "a forged line in kubectl describe",
			state:       api.State{Phase: api.PhaseFailed, Reason: "StartFailed", Message: "bad\n  Normal  Started  virt-handler  all good\x1b[2J"},
			wantMessage: "bad   Normal  Started  virt-handler  all good [2J",
		},
		{
			name:        "a message too long",
			state:       api.State{Phase: api.PhaseFailed, Reason: "StartFailed", Message: strings.Repeat("é", 4000)},
			wantMessage: strings.Repeat("é", maxMessage/2) + "…",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := nextStatus(scheduledVMI("f"), tt.state, metav1.Now())
			assert.Equal(t, v1.Failed, s.Phase)
			assert.Equal(t, tt.state.Reason, s.Reason)
			c := s.Condition(v1.VirtualMachineInstanceSynchronized)
			require.NotNil(t, c)
			assert.Equal(t, corev1.ConditionFalse, c.Status)
			assert.Equal(t, tt.state.Reason, c.Reason)
			assert.Equal(t, tt.wantMessage, c.Message)
		})
	}
	s := nextStatus(scheduledVMI("g"), api.State{Phase: api.PhaseSucceeded, Reason: "GuestShutdown"}, metav1.Now())
	assert.Nil(t, s.Condition(v1.VirtualMachineInstanceSynchronized), "a clean end is no failure")
}
