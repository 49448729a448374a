package launcherpod

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// Attachment pods bring a hotplugged claim to the instance's node (docs/hotplug.md): one pod
// per hotplugged volume, on the launcher pod's node, owned by the launcher pod (so it goes
// with it), with the claim its only volume. Kubernetes attaches and mounts the claim as for
// any pod (its scheduler, attach/detach controller, CSI drivers and quota); virt-handler then
// opens the claim's file through the pod's process and hands the descriptor to the launcher.
const (
	// HotplugAppLabelValue is AppLabel's value on attachment pods, as KubeVirt labels its.
	HotplugAppLabelValue = "hotplug-disk"
	// HotplugVolumeLabel names the instance's volume an attachment pod carries.
	HotplugVolumeLabel = "hangarvm.io/hotplug-volume"
	// HotplugMountPath is where an attachment pod has its claim: a file system claim's
	// directory (its image at HotplugMountPath/disk.img), or a block claim's device.
	HotplugMountPath = "/hotplug"
	// HotplugImage is the claim's image file below HotplugMountPath, as the launcher's
	// cold-plugged claims have theirs.
	HotplugImage = "disk.img"
	// hotplugContainer is the attachment pod's one container.
	hotplugContainer = "hotplug-disk"
)

// AttachmentPodName is the attachment pod of volume of the instance: the same for the same
// instance and volume, so a create is never made twice.
func AttachmentPodName(vmi *v1.VirtualMachineInstance, volume string) string {
	sum := sha256.Sum256([]byte(string(vmi.UID) + "/" + volume))
	return "hp-volume-" + hex.EncodeToString(sum[:])[:10]
}

// AttachmentPod is the pod that brings claim (of volumeMode mode and size bytes) for the
// instance's volume to launcher's node. It runs image's hangar-copy in its hold mode, as the
// launcher's user, under Pod Security restricted: it makes the disk image of a file system
// claim if there is none (size bytes, sparse) and waits.
func AttachmentPod(vmi *v1.VirtualMachineInstance, launcher *corev1.Pod, volume, claim string, mode corev1.PersistentVolumeMode, size int64, image string) *corev1.Pod {
	pull := corev1.PullIfNotPresent
	for _, c := range launcher.Spec.Containers {
		if c.Image == image {
			pull = c.ImagePullPolicy // as the launcher's own image is pulled
		}
	}
	container := corev1.Container{
		Name:            hotplugContainer,
		Image:           image,
		ImagePullPolicy: pull,
		Command:         []string{CopyHelperImagePath, "-hold", HotplugMountPath + "/" + HotplugImage, strconv.FormatInt(size, 10)},
		SecurityContext: containerSecurityContext(),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if mode == corev1.PersistentVolumeBlock {
		container.Command = []string{CopyHelperImagePath, "-hold"}
		container.VolumeDevices = []corev1.VolumeDevice{{Name: volume, DevicePath: HotplugMountPath + "/" + HotplugImage}}
	} else {
		container.VolumeMounts = []corev1.VolumeMount{{Name: volume, MountPath: HotplugMountPath}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      AttachmentPodName(vmi, volume),
			Namespace: vmi.Namespace,
			Labels: map[string]string{v1.AppLabel: HotplugAppLabelValue, v1.CreatedByLabel: string(vmi.UID),
				HotplugVolumeLabel: volume},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: launcher.Name, UID: launcher.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			// The launcher's node, by name, as a DaemonSet places its pods: the scheduler still
			// checks the claim's topology and the node's room.
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{launcher.Spec.NodeName}}}}}}}},
			Tolerations:                   launcher.Spec.Tolerations,
			PriorityClassName:             launcher.Spec.PriorityClassName,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To(int64(5)),
			SecurityContext:               podSecurityContext(),
			ImagePullSecrets:              launcher.Spec.ImagePullSecrets,
			Containers:                    []corev1.Container{container},
			Volumes: []corev1.Volume{{Name: volume, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

// MemoryDumpPod is the attachment pod of a memory dump volume: as a hotplugged file system
// claim's, but its process creates the empty dump file (file, in the claim's root) that
// virt-handler opens for the launcher.
func MemoryDumpPod(vmi *v1.VirtualMachineInstance, launcher *corev1.Pod, volume, claim, file, image string) *corev1.Pod {
	pod := AttachmentPod(vmi, launcher, volume, claim, corev1.PersistentVolumeFilesystem, 0, image)
	pod.Spec.Containers[0].Command = []string{CopyHelperImagePath, "-hold", HotplugMountPath + "/" + file, "0"}
	return pod
}

// MemoryDumpFileOf is the dump file a memory dump's attachment pod creates; "" for other pods.
func MemoryDumpFileOf(pod *corev1.Pod) string {
	if len(pod.Spec.Containers) == 0 {
		return ""
	}
	cmd := pod.Spec.Containers[0].Command
	if len(cmd) != 4 || cmd[1] != "-hold" || cmd[3] != "0" {
		return ""
	}
	return strings.TrimPrefix(cmd[2], HotplugMountPath+"/")
}
