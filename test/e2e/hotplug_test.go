//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// hotplugSize is the hotplugged claim's size: 64 MiB, 131072 sectors in the guest.
const hotplugSize = 64 << 20

// TestHotplugVolume hot-plugs a claim of the cluster's default class (local-path) into a
// running guest with virtctl addvolume (docs/hotplug.md): an attachment pod brings the claim
// to the node (the namespace enforces Pod Security restricted, so it meets it), virt-handler
// hands the file to the launcher, the volume turns Ready, and the guest sees a SCSI disk of
// the claim's size and writes to it, the bytes landing in the claim's disk image. Bad input
// gets 422s with field paths. removevolume takes the disk out of the guest, and the
// attachment pod goes.
func TestHotplugVolume(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-hotplug")
	hotplugClaim(t, ns, "hot")
	vmi, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deleteVMIAndWait(t, ns, "guest", vmi.UID) })
	console := attach(t, ns, "guest", "console")
	waitVMI(t, ns, "guest", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	console.waitFor(t, banner, 120*time.Second)
	console.typeUntil(t, loadDiskDrivers+"; echo loaded-$((6*7))", "loaded-42")

	t.Run("bad input: 422 with field paths", func(t *testing.T) {
		for _, tc := range []struct{ args, want []string }{
			{[]string{"addvolume", "guest", "--volume-name=nothing-such", "-n", ns}, []string{"is not a DataVolume or PersistentVolumeClaim"}},
			{[]string{"removevolume", "guest", "--volume-name=nothing-such", "-n", ns}, []string{"name: Not found"}},
		} {
			out, err := virtctl(t, tc.args...)
			require.Error(t, err, out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
		}
	})

	out, err := virtctl(t, "addvolume", "guest", "--volume-name=hot", "-n", ns)
	require.NoError(t, err, out)
	assert.Contains(t, out, "Successfully submitted add volume request to VM guest for volume hot")
	out, err = virtctl(t, "addvolume", "guest", "--volume-name=hot", "-n", ns)
	require.Error(t, err, "twice")
	assert.Contains(t, out, "name: Duplicate value")

	vmi, pod := waitHotplugReady(t, ns, "guest")
	assert.Equal(t, launcherpod.HotplugAppLabelValue, pod.Labels[v1.AppLabel])
	assert.Equal(t, vmi.Status.NodeName, pod.Spec.NodeName, "on the guest's node")
	migratable := vmiCondition(vmi, v1.VirtualMachineInstanceIsMigratable)
	require.NotNil(t, migratable)
	assert.Equal(t, corev1.ConditionFalse, migratable.Status)

	marker := "HANGAR-HOTPLUG-" + utilrand.String(8)
	console.typeUntil(t, "echo hot-size-$(cat /sys/block/sda/size)", fmt.Sprintf("hot-size-%d", hotplugSize/512))
	console.typeUntil(t, "printf %s "+marker+" | dd of=/dev/sda bs=1M seek=1 conv=fsync 2>/dev/null && sync && echo wrote-$((6*7))", "wrote-42")
	image := claimImage(t, ns, "hot", pod.Spec.NodeName)
	require.Eventually(t, func() bool { return readAt(t, image, 1<<20, len(marker)) == marker },
		10*time.Second, 200*time.Millisecond, "the guest's marker in the claim's image %s", image)

	unplug(t, ns, console, "hot", pod)
}

// TestHotplugBlockVolume hot-plugs a block claim (a local volume of a loop device on the
// first node) into a running guest on that node: the attachment pod maps the device,
// virt-handler hands it to the launcher, and QEMU takes the descriptors as an fd set (the
// launcher's container could not open the device itself: its device cgroup was never given
// it). The guest reads what the host wrote to the device and writes what the host then
// reads; removevolume takes the disk out of the guest, and the attachment pod goes.
func TestHotplugBlockVolume(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-hotplug-block")
	loop := loopDevice(t, blockSize)
	hostMarker, guestMarker := "HANGAR-HOST-"+utilrand.String(8), "HANGAR-GUEST-"+utilrand.String(8)
	writeAt(t, loop, 0, hostMarker)
	pvName := "e2e-hotplug-block-" + utilrand.String(5)
	createLocalBlockPV(t, pvName, loop, ns, "blk")
	createBlockClaim(t, ns, "blk", pvName)

	spec := guestSpec()
	spec.NodeSelector = map[string]string{corev1.LabelHostname: firstNode(t)} // the volume's node
	vmi, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deleteVMIAndWait(t, ns, "guest", vmi.UID) })
	console := attach(t, ns, "guest", "console")
	waitVMI(t, ns, "guest", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	console.waitFor(t, banner, 120*time.Second)
	console.typeUntil(t, loadDiskDrivers+"; echo loaded-$((6*7))", "loaded-42")

	out, err := virtctl(t, "addvolume", "guest", "--volume-name=blk", "-n", ns)
	require.NoError(t, err, out)
	vmi, pod := waitHotplugReady(t, ns, "guest")
	require.Len(t, pod.Spec.Containers, 1)
	assert.Len(t, pod.Spec.Containers[0].VolumeDevices, 1, "the attachment pod maps the claim")

	console.typeUntil(t, "echo blk-size-$(cat /sys/block/sda/size)", fmt.Sprintf("blk-size-%d", blockSize/512))
	console.typeUntil(t, fmt.Sprintf("dd if=/dev/sda bs=64 count=1 2>/dev/null | head -c %d; echo", len(hostMarker)), hostMarker)
	console.typeUntil(t, "printf %s "+guestMarker+" | dd of=/dev/sda bs=512 seek=8 conv=fsync 2>/dev/null && sync && echo wrote-$((6*7))", "wrote-42")
	require.Eventually(t, func() bool { return readAt(t, loop, 8*512, len(guestMarker)) == guestMarker },
		10*time.Second, 200*time.Millisecond, "the guest's marker on the node's loop device %s", loop)

	unplug(t, ns, console, "blk", pod)
}

// unplug removes the hotplugged volume (sda in the guest) from the instance ns/guest with
// virtctl removevolume, and sees it leave the status and the guest, and its attachment pod go.
func unplug(t *testing.T, ns string, console *stream, volume string, pod *corev1.Pod) {
	t.Helper()
	out, err := virtctl(t, "removevolume", "guest", "--volume-name="+volume, "-n", ns)
	require.NoError(t, err, out)
	waitVMI(t, ns, "guest", 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return len(v.Status.VolumeStatus) == 0 })
	console.typeUntil(t, "for i in $(seq 30); do [ -e /sys/block/sda ] || break; sleep 1; done; echo sda-$([ -e /sys/block/sda ] && echo present || echo gone)", "sda-gone")
	require.Eventually(t, func() bool {
		_, err := kube.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, time.Second, "the attachment pod goes")
}

// hotplugClaim makes the file system claim ns/name of hotplugSize, of the default class.
func hotplugClaim(t *testing.T, ns, name string) {
	t.Helper()
	_, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(hotplugSize, resource.BinarySI)}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitHotplugReady waits until the instance ns/name has one hotplugged volume, Ready as sda,
// and returns the instance and the volume's attachment pod.
func waitHotplugReady(t *testing.T, ns, name string) (*v1.VirtualMachineInstance, *corev1.Pod) {
	t.Helper()
	vmi := waitVMI(t, ns, name, 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return len(v.Status.VolumeStatus) == 1 && v.Status.VolumeStatus[0].Phase == v1.VolumeReady
	})
	status := vmi.Status.VolumeStatus[0]
	assert.Equal(t, "sda", status.Target)
	require.NotNil(t, status.HotplugVolume)
	pod, err := kube.CoreV1().Pods(ns).Get(context.Background(), status.HotplugVolume.AttachPodName, metav1.GetOptions{})
	require.NoError(t, err)
	return vmi, pod
}

// claimImage is the disk image of a bound file system claim of local-path on node, as the
// host sees it.
func claimImage(t *testing.T, ns, claim, node string) string {
	t.Helper()
	return claimFile(t, ns, claim, node, launcherpod.HotplugImage)
}

// claimFile is file in the root of a bound file system claim of local-path on node, as the
// host sees it: the local cluster's node keeps local-path's directory in
// _cluster/nodes/<node>/local-path.
func claimFile(t *testing.T, ns, claim, node, file string) string {
	t.Helper()
	c, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), claim, metav1.GetOptions{})
	require.NoError(t, err)
	pv, err := kube.CoreV1().PersistentVolumes().Get(context.Background(), c.Spec.VolumeName, metav1.GetOptions{})
	require.NoError(t, err)
	var dir string
	switch {
	case pv.Spec.HostPath != nil:
		dir = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
	default:
		t.Fatalf("claim %s: PV %s is neither hostPath nor local", claim, pv.Name)
	}
	path := filepath.Join(framework.RepoRoot(), "_cluster", "nodes", node, "local-path", filepath.Base(dir), file)
	_, err = os.Stat(path)
	require.NoError(t, err)
	return path
}

// TestHotplugVolumePersist: virtctl addvolume --persist hot-plugs a claim into a VM's running
// instance and keeps it in the VM's template, so that after a restart the new instance has it
// from its start (its launcher pod mounts the claim; no attachment pod); removevolume
// --persist takes it out of both.
func TestHotplugVolumePersist(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-hotplug-persist")
	hotplugClaim(t, ns, "kept")
	spec := guestSpec()
	_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways), Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: spec}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = hangar.KubevirtV1().VirtualMachines(ns).Delete(context.Background(), "vm", metav1.DeleteOptions{})
	})
	first := waitVMI(t, ns, "vm", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })

	out, err := virtctl(t, "addvolume", "vm", "--volume-name=kept", "--persist", "-n", ns)
	require.NoError(t, err, out)
	vm, err := hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "vm", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, vm.Spec.Template.Spec.Volumes, 1)
	assert.True(t, vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.Hotpluggable, "in the template")
	waitVMI(t, ns, "vm", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.UID == first.UID && len(v.Status.VolumeStatus) == 1 && v.Status.VolumeStatus[0].Phase == v1.VolumeReady
	})

	out, err = virtctl(t, "restart", "vm", "-n", ns)
	require.NoError(t, err, out)
	second := waitVMI(t, ns, "vm", 180*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.UID != first.UID && v.Status.Phase == v1.Running
	})
	assert.Empty(t, second.Status.VolumeStatus, "an ordinary disk of the new instance, no attachment pod")
	pods := launcherPods(t, ns, second.UID)
	require.Len(t, pods, 1)
	claims := map[string]bool{}
	for _, v := range pods[0].Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.PersistentVolumeClaim.ClaimName] = true
		}
	}
	assert.True(t, claims["kept"], "the launcher pod mounts the claim")
	console := attach(t, ns, "vm", "console")
	console.waitFor(t, banner, 120*time.Second)
	console.typeUntil(t, loadDiskDrivers+"; sleep 2; echo kept-size-$(cat /sys/block/sda/size)",
		fmt.Sprintf("kept-size-%d", hotplugSize/512))

	// A volume the instance started with is no hotplugged one to take out of a running guest
	// (409); the template's goes.
	out, err = virtctl(t, "removevolume", "vm", "--volume-name=kept", "-n", ns)
	require.Error(t, err, out)
	assert.Contains(t, out, "the instance started with volume kept")
	out, err = virtctl(t, "removevolume", "vm", "--volume-name=kept", "--persist", "-n", ns)
	require.NoError(t, err, out)
	vm, err = hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "vm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, vm.Spec.Template.Spec.Volumes)
}
