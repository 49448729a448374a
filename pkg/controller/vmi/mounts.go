package vmi

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"
)

// FailedMountReason is the kubelet's event reason when it cannot mount a pod's volume: a
// cloud-init Secret or a claim that does not exist, say. The instance shows it in its
// Synchronized condition while its launcher pod waits, as it shows FailedPvcNotFound.
const FailedMountReason = "FailedMount"

const (
	// maxMountEvents bounds the events read of one pod. The kubelet keeps one FailedMount
	// event per pod and volume, counting its repeats.
	maxMountEvents = 16
	// maxMountMessage bounds the message shown: whoever may create events can write one.
	maxMountMessage = 1024
	// mountRecheck is how often a launcher pod that waits to start on its node is looked at
	// again for the kubelet's word on its volumes.
	mountRecheck = 10 * time.Second
)

// failedMountSelector selects the FailedMount events about one pod.
func failedMountSelector(pod *corev1.Pod) string {
	return fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)),
		fields.OneTermEqualSelector("reason", FailedMountReason)).String()
}

// waitsOnNode says whether a launcher pod is bound to a node and has not started: the state in
// which only the kubelet's events say why.
func waitsOnNode(pod *corev1.Pod) bool {
	return pod != nil && pod.Spec.NodeName != "" && pod.Status.Phase == corev1.PodPending
}

// mountFailure is the message of the kubelet's latest FailedMount event of a launcher pod that
// is bound to a node but not started yet ("" when there is none): a pod whose volume cannot be
// mounted waits in ContainerCreating, and only this event says why.
//
// The events are read when needed, a few of one pod, rather than cached: events can be
// created by users as well as by kubelets, so an informer of them would hold whatever anyone
// wrote, in every namespace.
func (c *Controller) mountFailure(ctx context.Context, pod *corev1.Pod) string {
	if !waitsOnNode(pod) {
		return ""
	}
	events, err := c.kube.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: failedMountSelector(pod), Limit: maxMountEvents})
	if err != nil {
		klog.V(2).InfoS("Cannot read the events of a waiting launcher pod", "pod", klog.KObj(pod), "err", err)
		return ""
	}
	var latest *corev1.Event
	for i := range events.Items {
		e := &events.Items[i]
		if e.InvolvedObject.UID != pod.UID || e.Reason != FailedMountReason {
			continue
		}
		if latest == nil || eventTime(latest).Before(eventTime(e)) {
			latest = e
		}
	}
	if latest == nil {
		return ""
	}
	return truncateMessage(latest.Message, maxMountMessage)
}

// truncateMessage cuts s to at most n bytes, on a rune boundary.
func truncateMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
