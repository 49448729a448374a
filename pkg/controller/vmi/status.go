package vmi

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Reasons in status.reason of an instance that failed before the node agent took it over.
const (
	// ReasonPodDeleted: the launcher pod disappeared or is being deleted.
	ReasonPodDeleted = "PodDeleted"
	// ReasonPodFailed: the launcher pod terminated.
	ReasonPodFailed = "PodFailed"
	// ReasonPodCompleted: the launcher pod of a running instance ended cleanly without the
	// node agent's report.
	ReasonPodCompleted = "PodCompleted"
)

// nodeAgentPatience is how long the ended launcher pod of a Running instance waits for the
// node agent's report of how the guest ended before the pod's end is taken for the guest's
// (a pod never outlives its guest and vice versa). Without it an instance whose node
// restarted, or whose launcher was killed, would stay Running forever.
const nodeAgentPatience = 10 * time.Second

// Reasons of the Ready condition (KubeVirt's).
const (
	ReasonGuestNotRunning = "GuestNotRunning"
	ReasonPodNotReady     = "PodNotReady"
)

// PodScheduledCondition is the instance condition that mirrors an unscheduled launcher pod,
// as KubeVirt does; the VirtualMachine shows ErrorUnschedulable from it.
const PodScheduledCondition = v1.VirtualMachineInstanceConditionType(corev1.PodScheduled)

// waitingFor is why an instance that needs a pod cannot have one yet: the Synchronized
// condition's reason and the message.
type waitingFor struct {
	reason, message string
}

// nextStatus is the status the instance should have given its launcher pod (nil: none in the
// cache), whether a pod creation is still to be observed, whether the pod's node stopped
// responding (nodes.go), for an instance without a pod why it
// cannot have one yet (waiting), and for a pod that cannot start why the kubelet cannot mount
// its volumes (mountFailure). It never leaves a final phase and never enters Running or later:
// those are the node agent's.
func nextStatus(vmi *v1.VirtualMachineInstance, pod *corev1.Pod, creationPending, nodeDown bool, waiting waitingFor, mountFailure string, now metav1.Time) v1.VirtualMachineInstanceStatus {
	s := *vmi.Status.DeepCopy()
	// Step through the controller's phases until none applies, so an instance whose pod is
	// already bound (after a controller restart, say) goes straight to Scheduled.
	for range 4 {
		next, reason := nextPhase(s.Phase, pod, creationPending, nodeDown, now)
		if next == s.Phase {
			break
		}
		s.Phase, s.Reason = next, reason
		s.PhaseTransitionTimestamps = append(s.PhaseTransitionTimestamps,
			v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: next, PhaseTransitionTimestamp: now})
		if next == v1.Scheduled {
			s.NodeName = pod.Spec.NodeName
		}
	}
	if isFinal(s.Phase) {
		s.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: ReasonGuestNotRunning}, now)
		return s
	}

	if c := s.Condition(v1.VirtualMachineInstanceSynchronized); c != nil &&
		((c.Reason == FailedPvcNotFoundReason || c.Reason == DataVolumesNotReadyReason) && waiting.message == "" ||
			c.Reason == FailedMountReason && mountFailure == "") {
		s.RemoveCondition(v1.VirtualMachineInstanceSynchronized)
	}
	switch {
	case pod == nil && waiting.message != "":
		// As KubeVirt reports a missing claim: not synchronized, and unschedulable (the
		// condition an unschedulable pod gives too).
		s.SetCondition(v1.VirtualMachineInstanceCondition{
			Type: v1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: waiting.reason, Message: waiting.message,
		}, now)
		s.SetCondition(v1.VirtualMachineInstanceCondition{
			Type: PodScheduledCondition, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: waiting.message,
		}, now)
	case pod == nil && s.Phase == v1.Pending:
		s.RemoveCondition(PodScheduledCondition)
	case pod != nil:
		if pod.Spec.NodeName != "" {
			if s.ActivePods == nil {
				s.ActivePods = map[types.UID]string{}
			}
			s.ActivePods[pod.UID] = pod.Spec.NodeName
		}
		if pod.Status.QOSClass != "" {
			s.QOSClass = &pod.Status.QOSClass
		}
		setFeaturesDropped(&s, vmi, pod, now)
		if mountFailure != "" {
			// A missing cloud-init Secret, say: the pod waits in ContainerCreating until it
			// appears, as KubeVirt's does; the instance says why.
			s.SetCondition(v1.VirtualMachineInstanceCondition{
				Type: v1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: FailedMountReason, Message: mountFailure,
			}, now)
		}
		if cond := podCondition(pod, corev1.PodScheduled); cond != nil && cond.Status == corev1.ConditionFalse {
			s.SetCondition(v1.VirtualMachineInstanceCondition{
				Type: PodScheduledCondition, Status: cond.Status, Reason: cond.Reason, Message: cond.Message,
			}, now)
		} else {
			s.RemoveCondition(PodScheduledCondition)
		}
	}

	ready := v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: ReasonGuestNotRunning}
	if s.Phase == v1.Running {
		if pod != nil && podReady(pod) {
			ready = v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}
		} else {
			ready.Reason = ReasonPodNotReady
		}
	}
	s.SetCondition(ready, now)
	return s
}

// nextPhase is one step of the controller's part of the lifecycle.
func nextPhase(phase v1.VirtualMachineInstancePhase, pod *corev1.Pod, creationPending, nodeDown bool, now metav1.Time) (v1.VirtualMachineInstancePhase, string) {
	if nodeDown && (phase == v1.Scheduled || phase == v1.Running) {
		return v1.Failed, ReasonNodeUnresponsive
	}
	switch phase {
	case v1.Running:
		// How a guest ends is the node agent's to say; these are the ends it cannot report.
		switch {
		case pod == nil && !creationPending:
			return v1.Failed, ReasonPodDeleted
		case pod == nil || !podTerminated(pod) || awaitingNodeAgent(pod, now) > 0:
		case pod.Status.Phase == corev1.PodSucceeded:
			return v1.Succeeded, ReasonPodCompleted
		default:
			return v1.Failed, ReasonPodFailed
		}
	case v1.VmPhaseUnset:
		return v1.Pending, ""
	case v1.Pending:
		if pod != nil {
			return v1.Scheduling, ""
		}
	case v1.Scheduling, v1.Scheduled:
		switch {
		case pod == nil && !creationPending:
			return v1.Failed, ReasonPodDeleted
		case pod == nil:
		case podTerminated(pod) && phase == v1.Scheduled && awaitingNodeAgent(pod, now) > 0:
			// The node agent may be reporting why the launcher could not start the guest (a
			// containerDisk without a disk): its reason says more than the pod's end.
		case podTerminated(pod):
			return v1.Failed, ReasonPodFailed
		case pod.DeletionTimestamp != nil:
			return v1.Failed, ReasonPodDeleted
		case phase == v1.Scheduling && pod.Spec.NodeName != "":
			return v1.Scheduled, ""
		}
	}
	return phase, ""
}

// awaitingNodeAgent is how much longer the node agent has to report on the guest of an
// ended launcher pod, counted from when the pod stopped being ready or its compute container
// ended, whichever is later (a pod that never was ready has had its Ready condition False
// since it started).
func awaitingNodeAgent(pod *corev1.Pod, now metav1.Time) time.Duration {
	var ended time.Time
	if c := podCondition(pod, corev1.PodReady); c != nil && c.Status != corev1.ConditionTrue {
		ended = c.LastTransitionTime.Time
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == layout.ComputeContainer && cs.State.Terminated != nil && cs.State.Terminated.FinishedAt.After(ended) {
			ended = cs.State.Terminated.FinishedAt.Time
		}
	}
	return max(0, nodeAgentPatience-now.Sub(ended))
}

func podTerminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == layout.ComputeContainer {
			return cs.Ready
		}
	}
	return false
}
