package vmi

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Event reasons of an instance's lifecycle, KubeVirt's where it has them.
const (
	StartedReason = "Started"
	StoppedReason = "Stopped"
	FailedReason  = "Failed"
	PausedReason  = "Paused"
	ResumedReason = "Resumed"
)

// maxEventMessage bounds what an event repeats of a status message (which a launcher wrote).
const maxEventMessage = 1024

// recordTransitions records an event for each change a user looks for between two versions
// of an instance: started, stopped, failed (with the reason and what the node said),
// paused and resumed. virt-controller records them, from the status the node agent writes,
// so that virt-handler needs no right on events: the handler only writes the status of its
// node's instances. Only the leader's informer calls this, once per change.
func recordTransitions(recorder record.EventRecorder, old, cur *v1.VirtualMachineInstance) {
	if old == nil || cur == nil || old.UID != cur.UID {
		return
	}
	was, is := old.Status.Phase, cur.Status.Phase
	if was != is {
		switch is {
		case v1.Running:
			recorder.Event(cur, corev1.EventTypeNormal, StartedReason, "VirtualMachineInstance started.")
		case v1.Succeeded:
			recorder.Event(cur, corev1.EventTypeNormal, StoppedReason, withReason("The VirtualMachineInstance was shut down", cur.Status.Reason))
		case v1.Failed:
			recorder.Event(cur, corev1.EventTypeWarning, FailedReason, failureMessage(cur))
		}
	}
	if is != v1.Running {
		return
	}
	wasPaused, isPaused := paused(old), paused(cur)
	switch {
	case isPaused && !wasPaused:
		recorder.Event(cur, corev1.EventTypeNormal, PausedReason, "VirtualMachineInstance paused.")
	case wasPaused && !isPaused && was == v1.Running:
		recorder.Event(cur, corev1.EventTypeNormal, ResumedReason, "VirtualMachineInstance unpaused.")
	}
}

func paused(vmi *v1.VirtualMachineInstance) bool {
	c := vmi.Status.Condition(v1.VirtualMachineInstancePaused)
	return c != nil && c.Status == corev1.ConditionTrue
}

func withReason(msg, reason string) string {
	if reason == "" {
		return msg + "."
	}
	return fmt.Sprintf("%s (%s).", msg, reason)
}

// failureMessage says why an instance failed: its reason and, when the node agent reported
// one, the message of its Synchronized condition (the launcher's account, bounded there).
func failureMessage(vmi *v1.VirtualMachineInstance) string {
	reason := vmi.Status.Reason
	if reason == "" {
		reason = "Unknown"
	}
	msg := "VirtualMachineInstance failed: " + reason
	if c := vmi.Status.Condition(v1.VirtualMachineInstanceSynchronized); c != nil && c.Status == corev1.ConditionFalse && c.Message != "" {
		m := c.Message
		if len(m) > maxEventMessage {
			m = strings.ToValidUTF8(m[:maxEventMessage], "")
		}
		msg += ": " + m
	}
	return msg
}
