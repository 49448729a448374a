package handler

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// Reasons the handler writes.
const (
	ReasonPausedByUser    = "PausedByUser"
	ReasonGuestNotRunning = "GuestNotRunning"
	ReasonLauncherGone    = "LauncherGone"
)

func isFinal(p v1.VirtualMachineInstancePhase) bool { return p == v1.Succeeded || p == v1.Failed }

// nextStatus is the instance's status given its launcher's state. The handler owns the
// status from Scheduled on: phase Running and the final phases, Paused, the interfaces and
// what the guest agent reports (AgentConnected, guestOSInfo, fsFreezeStatus).
// Ready it writes as virt-controller does (True once running, False at the end), so the two
// never undo each other's writes. A final phase is never left.
func nextStatus(vmi *v1.VirtualMachineInstance, st api.State, now metav1.Time) v1.VirtualMachineInstanceStatus {
	s := *vmi.Status.DeepCopy()
	if isFinal(s.Phase) {
		return s
	}
	setPhase := func(p v1.VirtualMachineInstancePhase, reason string) {
		if s.Phase == p {
			return
		}
		s.Phase, s.Reason = p, reason
		s.PhaseTransitionTimestamps = append(s.PhaseTransitionTimestamps,
			v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: now})
	}
	switch st.Phase {
	case api.PhaseRunning, api.PhasePaused, api.PhaseShuttingDown:
		setPhase(v1.Running, "")
		s.Interfaces = interfaces(reportedInterfaces(vmi, st.Interfaces))
		setAgentStatus(&s, vmi, reportedAgent(st.Agent), now)
		s.FSFreezeStatus = ""
		if st.FSFrozen {
			s.FSFreezeStatus = v1.FSFrozen
		}
		if st.Phase == api.PhasePaused {
			// Ready is left alone while paused: virt-controller writes Ready too (from the
			// launcher pod's readiness) and would flip it back, each write waking the other.
			s.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue, Reason: ReasonPausedByUser, Message: "VMI was paused by user"}, now)
		} else {
			s.RemoveCondition(v1.VirtualMachineInstancePaused)
			s.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}, now)
		}
	case api.PhaseSucceeded, api.PhaseFailed:
		p := v1.Succeeded
		if st.Phase == api.PhaseFailed {
			p = v1.Failed
		}
		setPhase(p, st.Reason)
		s.RemoveCondition(v1.VirtualMachineInstancePaused)
		s.RemoveCondition(v1.VirtualMachineInstanceAgentConnected)
		s.FSFreezeStatus = ""
		s.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: ReasonGuestNotRunning}, now)
	}
	return s
}

func interfaces(in []api.Interface) []v1.VirtualMachineInstanceNetworkInterface {
	var out []v1.VirtualMachineInstanceNetworkInterface
	for _, i := range in {
		vi := v1.VirtualMachineInstanceNetworkInterface{
			Name: i.Name, MAC: i.MAC, IP: i.IP, PodInterfaceName: i.PodInterfaceName, InfoSource: "domain",
		}
		if i.IP != "" {
			vi.IPs = []string{i.IP}
		}
		out = append(out, vi)
	}
	return out
}
