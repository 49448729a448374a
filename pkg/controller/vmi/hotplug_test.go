package vmi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// withHotplugged gives the instance a hotplugged claim volume "hot" of claim "hot-claim".
func withHotplugged(vmi *v1.VirtualMachineInstance) {
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: "hot", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "hot-claim"}, Hotpluggable: true}}})
}

func running(vmi *v1.VirtualMachineInstance) {
	vmi.Status.NodeName = "node-a"
	vmi.Status.ActivePods = map[types.UID]string{"pod-launcher": "node-a"}
}

// attachmentPod is the attachment pod of volume "hot" of newVMI's instance, in phase.
func attachmentPod(phase corev1.PodPhase) *corev1.Pod {
	vmi := newVMI(v1.Running)
	pod := launcherpod.AttachmentPod(vmi, newPod("launcher", "uid-1", bound("node-a")), "hot", "hot-claim", corev1.PersistentVolumeFilesystem, 1<<30, "launcher:test")
	pod.UID = "pod-hp"
	pod.Status.Phase = phase
	return pod
}

func hotplugFixture(t *testing.T, vmi *v1.VirtualMachineInstance, attachment *corev1.Pod) *fixture {
	t.Helper()
	claim := newClaim("hot-claim", nil)
	claim.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	launcher := newPod("launcher", "uid-1", bound("node-a"), podPhase(corev1.PodRunning))
	f := newFixture(t, []*v1.VirtualMachineInstance{vmi}, []*corev1.Pod{launcher}, claim)
	pods := informers.NewSharedInformerFactory(f.kube, 0).Core().V1().Pods()
	require.NoError(t, f.c.EnableHotplug(pods))
	if attachment != nil {
		_, err := f.kube.CoreV1().Pods("ns").Create(context.Background(), attachment, metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, pods.Informer().GetIndexer().Add(attachment))
	}
	require.NoError(t, f.c.vmiIndexer.Add(vmi)) // again, for the new index
	f.kube.ClearActions()
	return f
}

// TestHotplugAttachmentPods follows a hotplugged volume through the controller: an attachment
// pod is made for it (Pending), AttachedToNode once that pod runs, the node agent's Ready
// stands, the instance is not migratable meanwhile, and once the spec dropped the volume and
// the node agent took it out of the status, the pod goes.
func TestHotplugAttachmentPods(t *testing.T) {
	ctx := context.Background()

	t.Run("no pod yet: made, Pending", func(t *testing.T) {
		f := hotplugFixture(t, newVMI(v1.Running, running, withHotplugged), nil)
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		pods, err := f.kube.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io=hotplug-disk"})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1)
		assert.Equal(t, "hot-claim", pods.Items[0].Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
		assert.Equal(t, []string{"/usr/bin/hangar-copy", "-hold", "/hotplug/disk.img", "1073741824"}, pods.Items[0].Spec.Containers[0].Command)
		s := f.vmi("vm1").Status
		require.Len(t, s.VolumeStatus, 1)
		assert.Equal(t, v1.VolumePending, s.VolumeStatus[0].Phase)
		assert.Equal(t, corev1.ConditionFalse, condition(f.vmi("vm1"), v1.VirtualMachineInstanceIsMigratable).Status)
	})

	t.Run("the pod runs: AttachedToNode with its name and UID", func(t *testing.T) {
		f := hotplugFixture(t, newVMI(v1.Running, running, withHotplugged), attachmentPod(corev1.PodRunning))
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		s := f.vmi("vm1").Status.VolumeStatus
		require.Len(t, s, 1)
		assert.Equal(t, v1.VolumeStatus{Name: "hot", Phase: v1.HotplugVolumeAttachedToNode,
			HotplugVolume: &v1.HotplugVolumeStatus{AttachPodName: attachmentPod("").Name, AttachPodUID: "pod-hp"}}, s[0])
	})

	t.Run("the node agent's Ready stands", func(t *testing.T) {
		ready := v1.VolumeStatus{Name: "hot", Target: "sda", Phase: v1.VolumeReady,
			HotplugVolume: &v1.HotplugVolumeStatus{AttachPodName: attachmentPod("").Name, AttachPodUID: "pod-hp"}}
		f := hotplugFixture(t, newVMI(v1.Running, running, withHotplugged, func(v *v1.VirtualMachineInstance) {
			v.Status.VolumeStatus = []v1.VolumeStatus{ready}
		}), attachmentPod(corev1.PodRunning))
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		assert.Equal(t, []v1.VolumeStatus{ready}, f.vmi("vm1").Status.VolumeStatus)
	})

	t.Run("dropped from the spec: Detaching, the pod stays until the node agent is done", func(t *testing.T) {
		f := hotplugFixture(t, newVMI(v1.Running, running, func(v *v1.VirtualMachineInstance) {
			v.Status.VolumeStatus = []v1.VolumeStatus{{Name: "hot", Target: "sda", Phase: v1.VolumeReady}}
		}), attachmentPod(corev1.PodRunning))
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		assert.Equal(t, v1.HotplugVolumeDetaching, f.vmi("vm1").Status.VolumeStatus[0].Phase)
		_, err := f.kube.CoreV1().Pods("ns").Get(ctx, attachmentPod("").Name, metav1.GetOptions{})
		assert.NoError(t, err, "still there")
	})

	t.Run("gone from spec and status: the pod goes", func(t *testing.T) {
		f := hotplugFixture(t, newVMI(v1.Running, running), attachmentPod(corev1.PodRunning))
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		_, err := f.kube.CoreV1().Pods("ns").Get(ctx, attachmentPod("").Name, metav1.GetOptions{})
		assert.Error(t, err, "deleted")
		assert.Empty(t, f.vmi("vm1").Status.VolumeStatus)
	})

	t.Run("a hotpluggable volume the launcher pod has needs no attachment pod", func(t *testing.T) {
		vmi := newVMI(v1.Running, running, withHotplugged)
		f := hotplugFixture(t, vmi, nil)
		launcher, err := f.kube.CoreV1().Pods("ns").Get(ctx, "launcher", metav1.GetOptions{})
		require.NoError(t, err)
		launcher.Spec.Volumes = []corev1.Volume{{Name: "hot", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "hot-claim"}}}}
		require.NoError(t, f.c.podIndexer.Update(launcher))
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		pods, err := f.kube.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io=hotplug-disk"})
		require.NoError(t, err)
		assert.Empty(t, pods.Items)
		assert.Empty(t, f.vmi("vm1").Status.VolumeStatus)
	})
}

const dumpFile = "vm1-dump-20261129-020000.memory.dump"

// withMemoryDump gives the instance the memory dump volume "dump" as the memorydump action
// does: the volume, and its status naming the dump's file.
func withMemoryDump(phase v1.VolumePhase, pod *v1.HotplugVolumeStatus) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: "dump", VolumeSource: v1.VolumeSource{MemoryDump: &v1.MemoryDumpVolumeSource{
			PersistentVolumeClaimVolumeSource: v1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "dump"}, Hotpluggable: true}}}})
		vmi.Status.VolumeStatus = []v1.VolumeStatus{{Name: "dump", Phase: phase, HotplugVolume: pod,
			MemoryDumpVolume: &v1.DomainMemoryDumpInfo{ClaimName: "dump", TargetFileName: dumpFile}}}
	}
}

// dumpPod is the attachment pod of a dump to file, in phase.
func dumpPod(file string, phase corev1.PodPhase) *corev1.Pod {
	pod := launcherpod.MemoryDumpPod(newVMI(v1.Running), newPod("launcher", "uid-1", bound("node-a")), "dump", "dump", file, "launcher:test")
	pod.UID, pod.Status.Phase = "pod-dump", phase
	return pod
}

// TestMemoryDumpAttachmentPods follows a memory dump volume through the controller: its pod
// makes the file the status names, the node agent's InProgress stands, the pod goes once the
// dump ended (and the status then names no pod: the claim is free), and a pod of an earlier
// dump goes before the next dump's is made.
func TestMemoryDumpAttachmentPods(t *testing.T) {
	ctx := context.Background()
	onPod := &v1.HotplugVolumeStatus{AttachPodName: dumpPod(dumpFile, "").Name, AttachPodUID: "pod-dump"}

	t.Run("requested: a pod that makes the named file", func(t *testing.T) {
		f := hotplugFixture(t, newVMI(v1.Running, running, withMemoryDump(v1.VolumePending, nil)), nil)
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		pods, err := f.kube.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io=hotplug-disk"})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1)
		assert.Equal(t, "dump", pods.Items[0].Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
		assert.Equal(t, []string{"/usr/bin/hangar-copy", "-hold", "/hotplug/" + dumpFile, "0"}, pods.Items[0].Spec.Containers[0].Command)
		s := f.vmi("vm1").Status.VolumeStatus
		require.Len(t, s, 1)
		assert.Equal(t, v1.VolumePending, s[0].Phase)
		assert.Equal(t, dumpFile, s[0].MemoryDumpVolume.TargetFileName)
	})

	t.Run("the pod runs: AttachedToNode; the node agent's InProgress stands", func(t *testing.T) {
		f := hotplugFixture(t, newVMI(v1.Running, running, withMemoryDump(v1.VolumePending, nil)), dumpPod(dumpFile, corev1.PodRunning))
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		s := f.vmi("vm1").Status.VolumeStatus
		require.Len(t, s, 1)
		assert.Equal(t, v1.HotplugVolumeAttachedToNode, s[0].Phase)
		assert.Equal(t, onPod, s[0].HotplugVolume)

		f = hotplugFixture(t, newVMI(v1.Running, running, withMemoryDump(v1.MemoryDumpVolumeInProgress, onPod)), dumpPod(dumpFile, corev1.PodRunning))
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		assert.Equal(t, v1.MemoryDumpVolumeInProgress, f.vmi("vm1").Status.VolumeStatus[0].Phase)
	})

	t.Run("the dump ended: the pod goes, then the status names none", func(t *testing.T) {
		f := hotplugFixture(t, newVMI(v1.Running, running, withMemoryDump(v1.MemoryDumpVolumeCompleted, onPod)), dumpPod(dumpFile, corev1.PodRunning))
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		_, err := f.kube.CoreV1().Pods("ns").Get(ctx, dumpPod(dumpFile, "").Name, metav1.GetOptions{})
		assert.Error(t, err, "deleted")
		assert.Equal(t, onPod, f.vmi("vm1").Status.VolumeStatus[0].HotplugVolume, "until the informer sees it gone")

		f = hotplugFixture(t, newVMI(v1.Running, running, withMemoryDump(v1.MemoryDumpVolumeCompleted, onPod)), nil)
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		s := f.vmi("vm1").Status.VolumeStatus
		assert.Equal(t, v1.MemoryDumpVolumeCompleted, s[0].Phase)
		assert.Nil(t, s[0].HotplugVolume)
	})

	t.Run("an earlier dump's pod goes first", func(t *testing.T) {
		earlier := dumpPod("vm1-dump-20261128-020000.memory.dump", corev1.PodRunning)
		f := hotplugFixture(t, newVMI(v1.Running, running, withMemoryDump(v1.VolumePending, nil)), earlier)
		require.NoError(t, f.c.sync(ctx, "ns/vm1"))
		_, err := f.kube.CoreV1().Pods("ns").Get(ctx, earlier.Name, metav1.GetOptions{})
		assert.Error(t, err, "deleted")
		s := f.vmi("vm1").Status.VolumeStatus
		assert.Equal(t, v1.VolumePending, s[0].Phase)
		assert.Equal(t, dumpFile, s[0].MemoryDumpVolume.TargetFileName)
	})
}
