package launcherpod

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestAttachmentPod: an attachment pod is on the launcher's node, owned by the launcher pod,
// labelled for its instance and volume, has the claim as its only volume (mounted, or mapped
// for a block claim), holds it with hangar-copy, and meets Pod Security restricted.
func TestAttachmentPod(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks())
	require.NoError(t, err)
	restricted := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns", UID: "vmi-uid"}}
	launcher := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-vm1-abcde", UID: "pod-uid"},
		Spec: corev1.PodSpec{NodeName: "node-2", Containers: []corev1.Container{{Name: "compute", ImagePullPolicy: corev1.PullIfNotPresent}}}}

	for _, mode := range []corev1.PersistentVolumeMode{corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock} {
		t.Run(string(mode), func(t *testing.T) {
			pod := AttachmentPod(vmi, launcher, "hot", "data-claim", mode, 1<<30, "reg/virt-launcher:v1")
			assert.Equal(t, AttachmentPodName(vmi, "hot"), pod.Name)
			assert.Equal(t, "ns", pod.Namespace)
			assert.Equal(t, map[string]string{"kubevirt.io": "hotplug-disk", "kubevirt.io/created-by": "vmi-uid", HotplugVolumeLabel: "hot"}, pod.Labels)
			owner := metav1.GetControllerOf(pod)
			require.NotNil(t, owner)
			assert.Equal(t, "pod-uid", string(owner.UID))
			assert.Equal(t, []string{"node-2"}, pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values)
			assert.False(t, *pod.Spec.AutomountServiceAccountToken)
			require.Len(t, pod.Spec.Volumes, 1)
			assert.Equal(t, "data-claim", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
			c := pod.Spec.Containers[0]
			if mode == corev1.PersistentVolumeBlock {
				assert.Equal(t, []corev1.VolumeDevice{{Name: "hot", DevicePath: "/hotplug/disk.img"}}, c.VolumeDevices)
				assert.Equal(t, []string{CopyHelperImagePath, "-hold"}, c.Command)
			} else {
				assert.Equal(t, []corev1.VolumeMount{{Name: "hot", MountPath: "/hotplug"}}, c.VolumeMounts)
				assert.Equal(t, []string{CopyHelperImagePath, "-hold", "/hotplug/disk.img", "1073741824"}, c.Command)
			}
			result := policy.AggregateCheckResults(evaluator.EvaluatePod(restricted, &pod.ObjectMeta, &pod.Spec))
			assert.True(t, result.Allowed, "restricted: %s", result.ForbiddenDetail())
		})
	}
	assert.NotEqual(t, AttachmentPodName(vmi, "hot"), AttachmentPodName(vmi, "other"))
}
