package handler

import (
	"time"

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

// reasonMigrated is a source launcher's end: its guest runs on the target.
const reasonMigrated = "Migrated"

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
	if ms := s.MigrationState; ms != nil && ms.SourceNode == vmi.Status.NodeName && !ms.Completed && !ms.Failed {
		reportMigration(ms, st.Migration, now)
	}
	if m := st.Migration; m != nil && m.Role == api.MigrationSource && (m.Completed || st.Reason == reasonMigrated) {
		// The guest left for the target: the instance runs on, and virt-controller hands it
		// over to the target node.
		return s
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
		s.VolumeStatus = volumeStatuses(s.VolumeStatus, st.Hotplugged, st.MemoryDumps, now)
		// Ready is virt-controller's while the guest runs (Running and the launcher pod's
		// readiness, as KubeVirt's): a second writer with another opinion, such as Ready as
		// soon as the guest runs while the kubelet has yet to report the pod ready, makes
		// each write wake the other, dozens of writes in the second the guest starts.
		if st.Phase == api.PhasePaused {
			s.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue, Reason: ReasonPausedByUser, Message: "VMI was paused by user"}, now)
		} else {
			s.RemoveCondition(v1.VirtualMachineInstancePaused)
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
		if p == v1.Failed && st.Reason != "" {
			// Why, in the launcher's words (a containerDisk without a disk, QEMU's refusal), as
			// KubeVirt reports a failed sync with the domain; virt-controller turns it into
			// an event.
			s.SetCondition(v1.VirtualMachineInstanceCondition{
				Type: v1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse,
				Reason: st.Reason, Message: cleanMessage(st.Message),
			}, now)
		}
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

// reportMigration writes what the source launcher says of the migration ms into ms: when it
// started and ended, how, and how an abort went. A requested abort of a migration the
// launcher never started ends it here.
func reportMigration(ms *v1.VirtualMachineInstanceMigrationState, m *api.Migration, now metav1.Time) {
	if m == nil || m.Role != api.MigrationSource || m.UID != string(ms.MigrationUid) {
		if ms.AbortRequested {
			ms.Failed, ms.AbortStatus, ms.EndTimestamp = true, v1.MigrationAbortSucceeded, &now
			ms.FailureReason = "Aborted before the source started it"
		}
		return
	}
	if m.StartedAt != nil && ms.StartTimestamp == nil {
		ms.StartTimestamp = &metav1.Time{Time: m.StartedAt.UTC().Truncate(time.Second)}
	}
	switch m.Mode {
	case api.MigrationPreCopy:
		ms.Mode = v1.MigrationPreCopy
	case api.MigrationPostCopy:
		ms.Mode = v1.MigrationPostCopy
	}
	switch m.AbortStatus {
	case api.AbortAborting:
		ms.AbortStatus = v1.MigrationAbortInProgress
	case api.AbortSucceeded:
		ms.AbortStatus = v1.MigrationAbortSucceeded
	case api.AbortFailed:
		ms.AbortStatus = v1.MigrationAbortFailed
	}
	if m.EndedAt == nil {
		return
	}
	ms.EndTimestamp = &metav1.Time{Time: m.EndedAt.UTC().Truncate(time.Second)}
	ms.Completed, ms.Failed = m.Completed, m.Failed && !m.Completed
	if ms.Failed {
		ms.FailureReason = m.Reason
		if m.Message != "" {
			ms.FailureReason += ": " + truncate(m.Message, maxMessage)
		}
	}
}
