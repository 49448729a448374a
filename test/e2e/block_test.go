//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// blockSize is the loop device's size: 16 MiB, 32768 sectors of 512 bytes in the guest.
const blockSize = 16 << 20

// TestBlockClaim gives a guest a block-mode claim backed by a loop device on the node: the
// instance waits Pending while its claim is missing, then boots with the claim as its second
// virtio disk, whose size and contents are the loop device's in both directions.
func TestBlockClaim(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-block")
	loop := loopDevice(t, blockSize)
	hostMarker := "HANGAR-HOST-" + utilrand.String(8)
	guestMarker := "HANGAR-GUEST-" + utilrand.String(8)
	writeAt(t, loop, 0, hostMarker)

	pvName := "e2e-block-" + utilrand.String(5)
	createLocalBlockPV(t, pvName, loop, ns, "data")

	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	spec := guestSpec()
	spec.Domain.Devices.Disks = []v1.Disk{
		{Name: "scratch", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}},
		{Name: "data", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}},
	}
	spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("8Mi")}}},
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
		}}},
	}
	vmi, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deleteVMIAndWait(t, ns, "guest", vmi.UID) })

	// No claim yet: Pending, no pod, KubeVirt's message.
	want := fmt.Sprintf("PVC %s/data does not exist, waiting for it to appear", ns)
	vmi = waitVMI(t, ns, "guest", 30*time.Second, func(v *v1.VirtualMachineInstance) bool {
		c := vmiCondition(v, v1.VirtualMachineInstanceConditionType(corev1.PodScheduled))
		return v.Status.Phase == v1.Pending && c != nil && c.Message == want
	})
	sync := vmiCondition(vmi, v1.VirtualMachineInstanceSynchronized)
	require.NotNil(t, sync)
	assert.Equal(t, "FailedPvcNotFound", sync.Reason)
	assert.Empty(t, launcherPods(t, ns, vmi.UID))
	// The recorder writes events in the background.
	require.Eventually(t, func() bool {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=guest,reason=FailedPvcNotFound"})
		return err == nil && len(events.Items) > 0 && events.Items[0].Message == want
	}, 10*time.Second, 200*time.Millisecond, "a FailedPvcNotFound event")

	// The claim appears: the instance gets a pod that maps it as a device, and boots.
	createBlockClaim(t, ns, "data", pvName)

	console := attach(t, ns, "guest", "console")
	vmi = waitVMI(t, ns, "guest", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	assert.Nil(t, vmiCondition(vmi, v1.VirtualMachineInstanceSynchronized))
	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	compute := pods[0].Spec.Containers[0]
	assert.Equal(t, []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/data"}}, compute.VolumeDevices)
	for _, m := range compute.VolumeMounts {
		assert.NotEqual(t, "data", m.Name, "a block claim is not mounted")
	}

	console.waitFor(t, banner, 60*time.Second)
	// The kernelBoot guest loads its disk drivers only when it boots from a disk.
	console.typeUntil(t, loadDiskDrivers+"; "+
		"echo sizes-$(cat /sys/block/vda/size)-$(cat /sys/block/vdb/size)", "sizes-16384-32768")
	console.typeUntil(t, fmt.Sprintf("dd if=/dev/vdb bs=64 count=1 2>/dev/null | head -c %d; echo", len(hostMarker)), hostMarker)
	console.typeUntil(t, "printf %s "+guestMarker+" | dd of=/dev/vdb bs=512 seek=8 conv=fsync 2>/dev/null && sync && echo wrote-$((6*7))", "wrote-42")

	require.Eventually(t, func() bool { return readAt(t, loop, 8*512, len(guestMarker)) == guestMarker },
		10*time.Second, 200*time.Millisecond, "the guest's marker on the node's loop device %s", loop)
}

// loopDevice attaches a sparse file of size bytes to a free loop device on the node (the test
// runs on the node) and detaches it when the test is over.
func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "block.img")
	f, err := os.Create(file)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	out, err := exec.Command("losetup", "--find", "--show", file).CombinedOutput()
	require.NoError(t, err, "losetup: %s", out)
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// createLocalBlockPV makes a local, block-mode PersistentVolume of the loop device on the
// cluster's node, reserved for the claim ns/claim, and removes the claim and the volume when
// the test is over (before the loop device goes).
func createLocalBlockPV(t *testing.T, name, dev, ns, claim string) {
	t.Helper()
	ctx := context.Background()
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)
	// The loop device is the host's, seen by every node; the volume is one node's, as a
	// local disk would be.
	host := nodes.Items[0].Labels[corev1.LabelHostname]
	require.NotEmpty(t, host)

	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(blockSize, resource.BinarySI)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:                    ptr.To(corev1.PersistentVolumeBlock),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			ClaimRef:                      &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dev}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
			}}}},
		},
	}
	_, err = kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{})
		_ = kube.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
		assert.Eventually(t, func() bool {
			_, err := kube.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 60*time.Second, 250*time.Millisecond, "PersistentVolume %s is deleted", name)
	})
}

// createBlockClaim makes the block claim ns/name of the volume pvName (createLocalBlockPV).
func createBlockClaim(t *testing.T, ns, name, pvName string) {
	t.Helper()
	_, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: ptr.To(""),
			VolumeName:       pvName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(blockSize, resource.BinarySI)}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// deleteVMIAndWait deletes an instance and waits until its launcher pod is gone, so the
// kubelet has unmapped its volumes.
func deleteVMIAndWait(t *testing.T, ns, name string, uid types.UID) {
	ctx := context.Background()
	_ = hangar.KubevirtV1().VirtualMachineInstances(ns).Delete(ctx, name, metav1.DeleteOptions{})
	pods := func() int {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1.CreatedByLabel + "=" + string(uid)})
		if err != nil {
			return -1
		}
		return len(list.Items)
	}
	assert.Eventually(t, func() bool { return pods() == 0 }, 90*time.Second, 250*time.Millisecond, "launcher pod of %s/%s is gone", ns, name)
}

func vmiCondition(vmi *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType) *v1.VirtualMachineInstanceCondition {
	for i := range vmi.Status.Conditions {
		if vmi.Status.Conditions[i].Type == t {
			return &vmi.Status.Conditions[i]
		}
	}
	return nil
}

func writeAt(t *testing.T, dev string, off int64, s string) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte(s), off)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
}

func readAt(t *testing.T, dev string, off int64, n int) string {
	t.Helper()
	f, err := os.Open(dev)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, n)
	_, err = f.ReadAt(buf, off)
	require.NoError(t, err)
	return string(bytes.TrimRight(buf, "\x00"))
}
