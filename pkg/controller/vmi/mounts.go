package vmi

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
)

// FailedMountReason is the kubelet's event reason when it cannot mount a pod's volume: a
// cloud-init Secret or a claim that does not exist, say. The instance shows it in its
// Synchronized condition while its launcher pod waits, as it shows FailedPvcNotFound.
const FailedMountReason = "FailedMount"

// FailedMountEvents selects the kubelet's FailedMount events on pods: what the event informer
// given to New must list (the controller needs no other event).
var FailedMountEvents = fields.AndSelectors(
	fields.OneTermEqualSelector("involvedObject.kind", "Pod"), fields.OneTermEqualSelector("reason", FailedMountReason)).String()

// eventsByPodIndex indexes FailedMount events by the namespace/name of their pod.
const eventsByPodIndex = "pod"

func indexByPod(obj any) ([]string, error) {
	e, ok := obj.(*corev1.Event)
	if !ok || e.InvolvedObject.Kind != "Pod" || e.Reason != FailedMountReason {
		return nil, nil
	}
	return []string{e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name}, nil
}

// enqueueEventPod enqueues the instance of the launcher pod an event is about.
func (c *Controller) enqueueEventPod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	e, ok := obj.(*corev1.Event)
	if !ok {
		return
	}
	pod, exists, err := c.podIndexer.GetByKey(e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name)
	if err != nil || !exists {
		return
	}
	c.enqueueOwner(pod)
}

// mountFailure is the message of the kubelet's latest FailedMount event of a launcher pod that
// is bound to a node but not started yet ("" when there is none): a pod whose volume cannot be
// mounted waits in ContainerCreating, and only this event says why.
func (c *Controller) mountFailure(pod *corev1.Pod) string {
	if pod == nil || pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodPending || c.eventIndexer == nil {
		return ""
	}
	objs, err := c.eventIndexer.ByIndex(eventsByPodIndex, pod.Namespace+"/"+pod.Name)
	if err != nil {
		return ""
	}
	var latest *corev1.Event
	for _, obj := range objs {
		e := obj.(*corev1.Event)
		if e.InvolvedObject.UID != pod.UID {
			continue // an earlier pod of the same name
		}
		if latest == nil || eventTime(latest).Before(eventTime(e)) {
			latest = e
		}
	}
	if latest == nil {
		return ""
	}
	return latest.Message
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
