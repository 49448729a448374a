package vmi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/controller/metrics"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// Finalizer keeps a deleted instance in the API until its launcher pod is gone, so a
// VirtualMachine cannot start a new instance of the same name while the old guest may still
// run. KubeVirt uses the same name.
const Finalizer = "foregroundDeleteVirtualMachine"

// Event reasons on instances.
const (
	SuccessfulCreatePodReason = "SuccessfulCreate"
	FailedCreatePodReason     = "FailedCreate"
	SuccessfulDeletePodReason = "SuccessfulDelete"
	FailedDeletePodReason     = "FailedDelete"
	// FailedPvcNotFoundReason: a claim the instance names does not exist (yet); KubeVirt's.
	FailedPvcNotFoundReason = "FailedPvcNotFound"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	vmi, err := c.vmiLister.VirtualMachineInstances(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.staleVersions.Forget(key)
		// The instance is gone: whatever pods are left ran it.
		_, stale, err := c.podsFor(key, "")
		if err != nil {
			return err
		}
		return c.deletePods(ctx, nil, stale)
	}
	if err != nil {
		return err
	}
	if c.staleVersions.Stale(key, vmi.ResourceVersion, c.now()) {
		return controllerutil.RequeueAfter(controllerutil.StaleVersionTTL) // our write's event brings us back
	}
	cachedVersion := vmi.ResourceVersion
	own, stale, err := c.podsFor(key, vmi.UID)
	if err != nil {
		return err
	}
	if err := c.deletePods(ctx, vmi, stale); err != nil {
		return err
	}

	if vmi.DeletionTimestamp != nil || isFinal(vmi.Status.Phase) {
		return c.finish(ctx, vmi, own)
	}

	vmi = vmi.DeepCopy()
	if !slices.Contains(vmi.Finalizers, Finalizer) {
		vmi.Finalizers = append(vmi.Finalizers, Finalizer)
		if vmi, err = c.kubevirt.KubevirtV1().VirtualMachineInstances(namespace).Update(ctx, vmi, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("add finalizer to %s: %w", key, err)
		}
		c.staleVersions.Replaced(key, cachedVersion, c.now())
	}

	pod := activePod(vmi, own)
	var syncErr error
	var waiting waitingFor // why an instance that needs a pod cannot have one yet
	creationPending := !c.expectations.Satisfied(string(vmi.UID))
	if pod == nil && !creationPending && needsPod(vmi.Status.Phase) {
		dvWaiting, err := c.dataVolumesWaiting(vmi)
		if err != nil {
			return err
		}
		modes, missing, err := launcherpod.ClaimVolumeModes(c.pvcLister, vmi)
		switch {
		case err != nil:
			return err
		case dvWaiting != "":
			waiting = waitingFor{reason: DataVolumesNotReadyReason, message: dvWaiting}
			if cond := vmi.Status.Condition(PodScheduledCondition); cond == nil || cond.Message != dvWaiting {
				c.recorder.Event(vmi, corev1.EventTypeNormal, DataVolumesNotReadyReason, dvWaiting)
			}
		case missing != "":
			// As KubeVirt: the instance stays Pending until the claim appears (its informer
			// brings us back), rather than getting a pod that could not be built right.
			waiting = waitingFor{reason: FailedPvcNotFoundReason,
				message: fmt.Sprintf("PVC %s/%s does not exist, waiting for it to appear", vmi.Namespace, missing)}
			if cond := vmi.Status.Condition(PodScheduledCondition); cond == nil || cond.Message != waiting.message {
				c.recorder.Event(vmi, corev1.EventTypeNormal, FailedPvcNotFoundReason, waiting.message)
			}
		default:
			// The pod just created counts as seen: the instance moves on to Scheduling in the
			// same status write, and the transition through Pending is still recorded.
			pod, syncErr = c.createPod(ctx, vmi, modes)
			creationPending = syncErr == nil
		}
	}

	mountFailure := c.mountFailure(ctx, pod)
	if mountFailure != "" {
		if cond := vmi.Status.Condition(v1.VirtualMachineInstanceSynchronized); cond == nil || cond.Message != mountFailure {
			c.recorder.Event(vmi, corev1.EventTypeWarning, FailedMountReason, mountFailure)
		}
	}
	now := metav1.Now()
	var nodeDown bool
	var nodeGraceLeft time.Duration
	if pod != nil && !isFinal(vmi.Status.Phase) {
		nodeDown, nodeGraceLeft = c.nodeUnresponsive(pod.Spec.NodeName)
	}
	status := nextStatus(vmi, pod, creationPending, nodeDown, waiting, mountFailure, now)
	c.setMigratable(vmi, &status, now)
	if c.attachmentPods != nil && pod != nil && status.Phase == v1.Running {
		volumes, err := c.hotplug(ctx, vmi, pod, now)
		status.VolumeStatus = volumes
		syncErr = errors.Join(syncErr, err)
		if len(volumes) > 0 {
			// The guest's hotplugged disks come from descriptors its launcher holds, which a
			// target's launcher would not (docs/hotplug.md).
			status.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
				Reason: v1.VirtualMachineInstanceReasonNotMigratable, Message: "the instance has hotplugged volumes, which cannot migrate yet"}, now)
		}
	}
	if !apiequality.Semantic.DeepEqual(status, vmi.Status) {
		old := vmi.Status.Phase
		vmi.Status = status
		if _, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(namespace).UpdateStatus(ctx, vmi, metav1.UpdateOptions{}); err != nil {
			return errors.Join(syncErr, fmt.Errorf("update status of %s: %w", key, err))
		}
		c.staleVersions.Replaced(key, cachedVersion, c.now())
		if old != status.Phase {
			klog.V(2).InfoS("Instance phase", "vmi", klog.KObj(vmi), "from", old, "to", status.Phase, "reason", status.Reason)
			if status.Reason == ReasonNodeUnresponsive {
				c.recorder.Eventf(vmi, corev1.EventTypeWarning, ReasonNodeUnresponsive,
					"node %s has not been Ready for %s: the instance failed", pod.Spec.NodeName, c.config.Get().NodeUnresponsiveGracePeriod)
			}
		}
	}
	if syncErr == nil && nodeGraceLeft > 0 {
		// The node is not Ready; come back when its grace period is over.
		return controllerutil.RequeueAfter(nodeGraceLeft + time.Second)
	}
	if syncErr == nil && (status.Phase == v1.Running || status.Phase == v1.Scheduled) && pod != nil && podTerminated(pod) {
		// Come back when the node agent's time to report on the ended pod is up.
		return controllerutil.RequeueAfter(awaitingNodeAgent(pod, now) + time.Second)
	}
	if syncErr == nil && waitsOnNode(pod) && !isFinal(status.Phase) {
		// Look again for the kubelet's word on the pod's volumes (no informer of events).
		return controllerutil.RequeueAfter(mountRecheck)
	}
	return syncErr
}

func (c *Controller) createPod(ctx context.Context, vmi *v1.VirtualMachineInstance, modes launcherpod.VolumeModes) (*corev1.Pod, error) {
	pod, err := launcherpod.Build(vmi, modes, c.config.Get())
	if err != nil {
		c.recorder.Eventf(vmi, corev1.EventTypeWarning, FailedCreatePodReason, "Error creating pod: %v", err)
		metrics.LauncherPodsCreated.WithLabelValues("error").Inc()
		return nil, err
	}
	uid := string(vmi.UID)
	c.expectations.ExpectCreations(uid, 1)
	created, err := c.kube.CoreV1().Pods(vmi.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.expectations.CreationObserved(uid)
		c.recorder.Eventf(vmi, corev1.EventTypeWarning, FailedCreatePodReason, "Error creating pod: %v", err)
		metrics.LauncherPodsCreated.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("create launcher pod for %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	metrics.LauncherPodsCreated.WithLabelValues("success").Inc()
	c.recorder.Eventf(vmi, corev1.EventTypeNormal, SuccessfulCreatePodReason, "Created virtual machine pod %s", created.Name)
	return created, nil
}

// finish handles an instance that is over or being deleted: its pods go, with the instance's
// grace period, and once none is left the finalizer goes too.
func (c *Controller) finish(ctx context.Context, vmi *v1.VirtualMachineInstance, pods []*corev1.Pod) error {
	if err := c.deletePods(ctx, vmi, pods); err != nil {
		return err
	}
	if len(pods) > 0 || !slices.Contains(vmi.Finalizers, Finalizer) {
		return nil // the pods' deletion events bring us back
	}
	cachedVersion := vmi.ResourceVersion
	vmi = vmi.DeepCopy()
	vmi.Finalizers = slices.DeleteFunc(vmi.Finalizers, func(f string) bool { return f == Finalizer })
	_, err := c.kubevirt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Update(ctx, vmi, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err == nil:
		c.staleVersions.Replaced(vmi.Namespace+"/"+vmi.Name, cachedVersion, c.now())
	}
	return err
}

// deletePods deletes the pods not already terminating. The grace period is the instance's
// (vmi may be nil for pods whose instance is gone: then the pod's own applies).
func (c *Controller) deletePods(ctx context.Context, vmi *v1.VirtualMachineInstance, pods []*corev1.Pod) error {
	var errs []error
	for _, pod := range pods {
		// A pod on an unresponsive node cannot end gracefully (no kubelet confirms it): it is
		// deleted at once, again if it is terminating already (nodes.go).
		nodeDown, _ := c.nodeUnresponsive(pod.Spec.NodeName)
		if pod.DeletionTimestamp != nil && !nodeDown {
			continue
		}
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}
		switch {
		case nodeDown:
			opts.GracePeriodSeconds = ptr.To[int64](0)
		case vmi != nil:
			opts.GracePeriodSeconds = ptr.To(gracePeriod(vmi))
		}
		err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone already, or a newer pod took the name
		}
		if vmi == nil {
			if err != nil {
				errs = append(errs, fmt.Errorf("delete orphaned launcher pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
			continue
		}
		if err != nil {
			c.recorder.Eventf(vmi, corev1.EventTypeWarning, FailedDeletePodReason, "Error deleting pod %s: %v", pod.Name, err)
			errs = append(errs, fmt.Errorf("delete launcher pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		c.recorder.Eventf(vmi, corev1.EventTypeNormal, SuccessfulDeletePodReason, "Deleted virtual machine pod %s", pod.Name)
	}
	return errors.Join(errs...)
}

func gracePeriod(vmi *v1.VirtualMachineInstance) int64 {
	if g := vmi.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return launcherpod.DefaultGracePeriodSeconds
}

// activePod is the pod that runs the instance: the newest one, preferring those not being
// deleted, on the instance's node once it has one. A migration's target pod (MigrationJobLabel)
// is the migration controller's until the instance is handed over to its node.
func activePod(vmi *v1.VirtualMachineInstance, pods []*corev1.Pod) *corev1.Pod {
	var best *corev1.Pod
	for _, p := range pods {
		node := vmi.Status.NodeName
		if node != "" && p.Spec.NodeName != node || node == "" && p.Labels[v1.MigrationJobLabel] != "" {
			continue
		}
		if best == nil ||
			(best.DeletionTimestamp != nil && p.DeletionTimestamp == nil) ||
			((best.DeletionTimestamp == nil) == (p.DeletionTimestamp == nil) && best.CreationTimestamp.Before(&p.CreationTimestamp)) {
			best = p
		}
	}
	return best
}

// needsPod: only an instance that never had a pod gets one; a later phase without a pod
// means the pod was lost, and the instance fails instead.
func needsPod(phase v1.VirtualMachineInstancePhase) bool {
	return phase == v1.VmPhaseUnset || phase == v1.Pending
}

func isFinal(phase v1.VirtualMachineInstancePhase) bool {
	return phase == v1.Succeeded || phase == v1.Failed
}
