package vmi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/controllerutil"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// Hotplug (docs/hotplug.md): for each hotplugged volume of a running instance that its
// launcher pod does not have, the controller makes an attachment pod on the instance's node
// and reports the volume Pending, then AttachedToNode once that pod runs; the node agent
// takes it from there (Ready once the guest has the disk). A volume the spec dropped keeps
// its pod until the node agent has taken it out of the guest and out of the status.

// vmisByUIDIndex finds an instance by its UID: attachment pods name theirs by its UID.
const vmisByUIDIndex = "byUID"

// ReasonAttachmentPodPending says why a hotplugged volume waits.
const ReasonAttachmentPodPending = v1.VolumeReasonAttachmentPodPending

// EnableHotplug lets the controller make attachment pods; pods informs of them (label
// kubevirt.io=hotplug-disk).
func (c *Controller) EnableHotplug(pods coreinformers.PodInformer) error {
	c.attachmentPods = pods.Lister()
	c.synced = append(c.synced, pods.Informer().HasSynced)
	if err := c.vmiIndexer.AddIndexers(cache.Indexers{vmisByUIDIndex: func(obj any) ([]string, error) {
		return []string{string(obj.(*v1.VirtualMachineInstance).UID)}, nil
	}}); err != nil {
		return fmt.Errorf("index instances by UID: %w", err)
	}
	enqueue := func(obj any) {
		o, ok := controllerutil.Object(obj)
		if !ok {
			return
		}
		vmis, _ := c.vmiIndexer.ByIndex(vmisByUIDIndex, o.GetLabels()[v1.CreatedByLabel])
		for _, vmi := range vmis {
			c.enqueue(vmi)
		}
	}
	_, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: enqueue,
	})
	return err
}

// hotplug makes and deletes the instance's attachment pods and returns the volume statuses
// that follow; launcher is its running launcher pod.
func (c *Controller) hotplug(ctx context.Context, vmi *v1.VirtualMachineInstance, launcher *corev1.Pod, now metav1.Time) ([]v1.VolumeStatus, error) {
	pods, err := c.attachmentPods.Pods(vmi.Namespace).List(labels.SelectorFromSet(labels.Set{
		v1.AppLabel: launcherpod.HotplugAppLabelValue, v1.CreatedByLabel: string(vmi.UID)}))
	if err != nil {
		return nil, err
	}
	byVolume := map[string]*corev1.Pod{}
	for _, p := range pods {
		byVolume[p.Labels[launcherpod.HotplugVolumeLabel]] = p
	}
	inPod := map[string]bool{}
	for _, v := range launcher.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			inPod[v.PersistentVolumeClaim.ClaimName] = true
		}
	}
	previous := map[string]v1.VolumeStatus{}
	for _, s := range vmi.Status.VolumeStatus {
		previous[s.Name] = s
	}
	var statuses []v1.VolumeStatus
	var errs []error
	wanted := map[string]bool{}
	for _, vol := range vmi.Spec.Volumes {
		if vol.MemoryDump != nil {
			wanted[vol.Name] = true
			s, err := c.memoryDump(ctx, vmi, launcher, vol, byVolume[vol.Name], previous[vol.Name], now)
			errs = append(errs, err)
			statuses = append(statuses, s)
			continue
		}
		claim := vol.ClaimSource()
		if claim == nil || !vol.Hotplugged() || inPod[claim.ClaimName] {
			continue
		}
		wanted[vol.Name] = true
		pod := byVolume[vol.Name]
		if pod == nil {
			if pod, err = c.createAttachmentPod(ctx, vmi, launcher, vol.Name, claim.ClaimName); err != nil {
				errs = append(errs, err)
			}
		}
		statuses = append(statuses, volumeStatus(vol.Name, pod, previous[vol.Name]))
	}
	// Volumes the spec dropped: their status stays (the node agent detaches them and removes
	// it), and their pod goes once it has.
	for _, s := range vmi.Status.VolumeStatus {
		if wanted[s.Name] {
			continue
		}
		s.Phase = v1.HotplugVolumeDetaching
		statuses = append(statuses, s)
	}
	for volume, pod := range byVolume {
		if _, listed := previous[volume]; wanted[volume] || listed || pod.DeletionTimestamp != nil {
			continue
		}
		errs = append(errs, c.deleteAttachmentPod(ctx, pod))
	}
	slices.SortFunc(statuses, func(a, b v1.VolumeStatus) int { return strings.Compare(a.Name, b.Name) })
	return statuses, errors.Join(errs...)
}

// volumeStatus is the status of a hotplugged volume whose attachment pod is pod (nil: none
// yet). What the node agent reported (Ready, its target) stands while the pod is the same.
func volumeStatus(volume string, pod *corev1.Pod, previous v1.VolumeStatus) v1.VolumeStatus {
	s := v1.VolumeStatus{Name: volume, Phase: v1.VolumePending, Reason: ReasonAttachmentPodPending,
		Message: "waiting for the attachment pod to be created"}
	if pod == nil {
		return s
	}
	s.HotplugVolume = &v1.HotplugVolumeStatus{AttachPodName: pod.Name, AttachPodUID: pod.UID}
	if previous.HotplugVolume != nil && previous.HotplugVolume.AttachPodUID == pod.UID && previous.Phase == v1.VolumeReady {
		return previous
	}
	if pod.Status.Phase != corev1.PodRunning {
		s.Message = fmt.Sprintf("attachment pod %s is %s", pod.Name, pod.Status.Phase)
		return s
	}
	s.Phase, s.Reason, s.Message = v1.HotplugVolumeAttachedToNode, "", ""
	return s
}

// memoryDump makes the attachment pod of a memory dump volume, which creates the dump file
// the status names (the memorydump action named it), and deletes it once the node agent
// reports the dump ended: the claim is free again. A pod of an earlier dump goes first.
func (c *Controller) memoryDump(ctx context.Context, vmi *v1.VirtualMachineInstance, launcher *corev1.Pod, vol v1.Volume,
	pod *corev1.Pod, previous v1.VolumeStatus, now metav1.Time) (v1.VolumeStatus, error) {
	md := previous.MemoryDumpVolume.DeepCopy()
	if md == nil || md.TargetFileName == "" {
		md = &v1.DomainMemoryDumpInfo{ClaimName: vol.MemoryDump.ClaimName,
			TargetFileName: v1.MemoryDumpFileName(vmi.Name, vol.MemoryDump.ClaimName, now.Time)}
	}
	if previous.Phase == v1.MemoryDumpVolumeCompleted || previous.Phase == v1.MemoryDumpVolumeFailed {
		s := *previous.DeepCopy()
		if pod == nil {
			s.HotplugVolume = nil // unmounted: the claim is free
			return s, nil
		}
		return s, c.deleteAttachmentPod(ctx, pod)
	}
	if pod != nil && launcherpod.MemoryDumpFileOf(pod) != md.TargetFileName {
		s := v1.VolumeStatus{Name: vol.Name, Phase: v1.VolumePending, Reason: ReasonAttachmentPodPending,
			Message: "waiting for the attachment pod of the last dump to go", MemoryDumpVolume: md}
		return s, c.deleteAttachmentPod(ctx, pod)
	}
	var err error
	if pod == nil {
		pod, err = c.createVolumePod(ctx, vmi, vol.Name, func() (*corev1.Pod, error) {
			return launcherpod.MemoryDumpPod(vmi, launcher, vol.Name, vol.MemoryDump.ClaimName, md.TargetFileName, c.config.Get().LauncherImage), nil
		})
	}
	s := volumeStatus(vol.Name, pod, previous)
	if pod != nil && previous.HotplugVolume != nil && previous.HotplugVolume.AttachPodUID == pod.UID && previous.Phase == v1.MemoryDumpVolumeInProgress {
		s = *previous.DeepCopy() // the node agent's word
	}
	s.MemoryDumpVolume = md
	return s, err
}

func (c *Controller) deleteAttachmentPod(ctx context.Context, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete attachment pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (c *Controller) createAttachmentPod(ctx context.Context, vmi *v1.VirtualMachineInstance, launcher *corev1.Pod, volume, claimName string) (*corev1.Pod, error) {
	return c.createVolumePod(ctx, vmi, volume, func() (*corev1.Pod, error) {
		return c.attachmentPod(vmi, launcher, volume, claimName)
	})
}

// attachmentPod is the attachment pod of a hotplugged disk's claim, sized as the claim is.
func (c *Controller) attachmentPod(vmi *v1.VirtualMachineInstance, launcher *corev1.Pod, volume, claimName string) (*corev1.Pod, error) {
	claim, err := c.pvcLister.PersistentVolumeClaims(vmi.Namespace).Get(claimName)
	if err != nil {
		return nil, fmt.Errorf("hotplugged volume %s: claim %s/%s: %w", volume, vmi.Namespace, claimName, err)
	}
	mode := corev1.PersistentVolumeFilesystem
	if claim.Spec.VolumeMode != nil {
		mode = *claim.Spec.VolumeMode
	}
	size := claim.Status.Capacity[corev1.ResourceStorage]
	if size.IsZero() {
		size = claim.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	return launcherpod.AttachmentPod(vmi, launcher, volume, claimName, mode, size.Value(), c.config.Get().LauncherImage), nil
}

// createVolumePod creates the attachment pod that build makes for the instance's volume.
func (c *Controller) createVolumePod(ctx context.Context, vmi *v1.VirtualMachineInstance, volume string, build func() (*corev1.Pod, error)) (*corev1.Pod, error) {
	pod, err := build()
	if err != nil {
		return nil, err
	}
	created, err := c.kube.CoreV1().Pods(vmi.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, nil // the informer brings it
	}
	if err != nil {
		c.recorder.Eventf(vmi, corev1.EventTypeWarning, FailedCreatePodReason, "Error creating attachment pod for volume %s: %v", volume, err)
		return nil, fmt.Errorf("create attachment pod for %s/%s volume %s: %w", vmi.Namespace, vmi.Name, volume, err)
	}
	c.recorder.Eventf(vmi, corev1.EventTypeNormal, SuccessfulCreatePodReason, "Created attachment pod %s for volume %s", created.Name, volume)
	return created, nil
}
