//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestCloudInitFromSecret: a cloudInitNoCloud volume's secretRef and networkDataSecretRef reach
// the guest through the launcher pod's secret volume, which the kubelet mounts (virt-handler
// may not read Secrets). While the Secret is missing the instance waits, saying why in its
// Synchronized condition; once it is created the guest boots and finds both payloads on its
// NoCloud disk.
func TestCloudInitFromSecret(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-cloudinit")
	userMarker := "HANGAR-USERDATA-" + utilrand.String(8)
	networkMarker := "HANGAR-NETWORKDATA-" + utilrand.String(8)

	spec := guestSpec()
	spec.Domain.Devices.Disks = []v1.Disk{{Name: "seed", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}}
	spec.Volumes = []v1.Volume{{Name: "seed", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{
		UserDataSecretRef:    &corev1.LocalObjectReference{Name: "seed"},
		NetworkDataSecretRef: &corev1.LocalObjectReference{Name: "seed"},
	}}}}
	vmi, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deleteVMIAndWait(t, ns, "guest", vmi.UID) })

	// No Secret yet: the kubelet cannot mount the pod's volume, and the instance says so.
	vmi = waitVMI(t, ns, "guest", 90*time.Second, func(v *v1.VirtualMachineInstance) bool {
		c := vmiCondition(v, v1.VirtualMachineInstanceSynchronized)
		return c != nil && c.Reason == "FailedMount" && strings.Contains(c.Message, `secret "seed" not found`)
	})
	assert.Equal(t, v1.Scheduled, vmi.Status.Phase)
	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	assert.Contains(t, pods[0].Spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "hangar-secret-0", MountPath: "/var/run/hangar/secrets/seed", ReadOnly: true})

	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "seed"},
		StringData: map[string]string{
			"userdata":    "#cloud-config\n# " + userMarker + "\n",
			"networkData": "version: 2 # " + networkMarker + "\n",
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The kubelet retries the mount with a growing back-off (up to ~2 minutes).
	console := attach(t, ns, "guest", "console")
	waitVMI(t, ns, "guest", 180*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.Status.Phase == v1.Running && vmiCondition(v, v1.VirtualMachineInstanceSynchronized) == nil
	})
	console.waitFor(t, banner, 60*time.Second)
	// The kernelBoot guest loads its disk drivers only when asked; the NoCloud image is vda, and
	// ISO 9660 keeps each file's bytes as they are.
	console.typeUntil(t, loadDiskDrivers+"; "+
		"echo seed-$(grep -c "+userMarker+" /dev/vda)-$(grep -c "+networkMarker+" /dev/vda)", "seed-1-1")
}
