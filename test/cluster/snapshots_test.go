//go:build cluster

package cluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// The snapshot add-on's class names (hack/tools/internal/cluster/snapshots.go).
const snapshotClass = "hangar-snapshot"

var (
	volumeSnapshots       = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
	volumeSnapshotClasses = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotclasses"}
)

// TestVolumeSnapshots: the snapshot add-on (HANGAR_CLUSTER_SNAPSHOTS=1) for real. A claim of
// the hangar-snapshot class written by a pod, a VolumeSnapshot of it ready to use, a later
// write to the source, and a claim restored from the snapshot: a pod on the snapshot's node
// reads what was written before the snapshot, not after. Then the same for a Block claim.
func TestVolumeSnapshots(t *testing.T) {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	dyn := dynamic.NewForConfigOrDie(cfg)
	if _, err := dyn.Resource(volumeSnapshotClasses).Get(ctx, snapshotClass, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if os.Getenv("HANGAR_CLUSTER_SNAPSHOTS") == "1" {
			t.Fatalf("no VolumeSnapshotClass %s, though HANGAR_CLUSTER_SNAPSHOTS=1 asks for the snapshot add-on", snapshotClass)
		}
		t.Skipf("no VolumeSnapshotClass %s: the snapshot add-on is off (HANGAR_CLUSTER_SNAPSHOTS=1 hack/cluster/up.sh turns it on)", snapshotClass)
	} else {
		require.NoError(t, err)
	}
	ns := namespace(t, "hangar-smoke-snapshots")

	claim := func(name string, mode corev1.PersistentVolumeMode, source *corev1.TypedLocalObjectReference) *corev1.PersistentVolumeClaim {
		c, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(snapshotClass),
				VolumeMode:       &mode,
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
				DataSource:       source,
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return c
	}
	// runPod runs a pod with the claim at /data (a Block claim at /dev/xvda) to completion and
	// returns its output and node.
	runPod := func(name, claimName, script, node string) (string, string) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				RestartPolicy:                 corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever,
					Command:      []string{"sh", "-c", script},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}},
			},
		}
		if c, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claimName, metav1.GetOptions{}); err == nil &&
			c.Spec.VolumeMode != nil && *c.Spec.VolumeMode == corev1.PersistentVolumeBlock {
			pod.Spec.Containers[0].VolumeMounts = nil
			pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
		}
		if node != "" {
			// A snapshot's data is on its volume's node: a restored claim is consumed there.
			pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		}
		_, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		var got *corev1.Pod
		eventually(t, ns, func() bool {
			got, err = kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && (got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed)
		}, 120*time.Second, "pod %s completes", name)
		out, err := kube.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(t, err)
		require.Equal(t, corev1.PodSucceeded, got.Status.Phase, "pod %s: %s", name, out)
		return strings.TrimSpace(string(out)), got.Spec.NodeName
	}

	start := time.Now()
	claim("source", corev1.PersistentVolumeFilesystem, nil)
	_, node := runPod("writer", "source", "echo first >/data/marker && mkdir /data/dir && echo nested >/data/dir/f && sync && cat /data/marker", "")
	t.Logf("claim provisioned and written on %s: %s", node, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	takeSnapshot := func(name, claimName string) {
		t.Helper()
		_, err := dyn.Resource(volumeSnapshots).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "snapshot.storage.k8s.io/v1",
			"kind":       "VolumeSnapshot",
			"metadata":   map[string]any{"name": name},
			"spec": map[string]any{
				"volumeSnapshotClassName": snapshotClass,
				"source":                  map[string]any{"persistentVolumeClaimName": claimName},
			},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		var snap *unstructured.Unstructured
		eventually(t, ns, func() bool {
			snap, err = dyn.Resource(volumeSnapshots).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			ready, _, _ := unstructured.NestedBool(snap.Object, "status", "readyToUse")
			return ready
		}, 120*time.Second, "VolumeSnapshot %s readyToUse (its events are above)", name)
		restoreSize, _, _ := unstructured.NestedString(snap.Object, "status", "restoreSize")
		assert.Equal(t, "64Mi", restoreSize, "a snapshot restores to its volume's size")
	}
	takeSnapshot("snap", "source")
	t.Logf("snapshot ready: %s", time.Since(start).Round(time.Millisecond))

	// Written after the snapshot: the restored claim must not see it.
	runPod("later-writer", "source", "echo second >/data/marker && echo later >/data/later && sync", "")

	start = time.Now()
	claim("restored", corev1.PersistentVolumeFilesystem, &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "snap"})
	out, readerNode := runPod("reader", "restored", "cat /data/marker /data/dir/f; ls /data", node)
	t.Logf("claim restored and read: %s", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, node, readerNode)
	lines := strings.Split(out, "\n")
	require.GreaterOrEqual(t, len(lines), 2, out)
	assert.Equal(t, "first", lines[0], "the restored claim holds what was written before the snapshot")
	assert.Equal(t, "nested", lines[1])
	assert.NotContains(t, out, "later", "nothing written after the snapshot")

	restored, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "restored", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.ClaimBound, restored.Status.Phase)
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, restored.Spec.VolumeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, pv.Spec.CSI)
	assert.Equal(t, "local.csi.hangar.dev", pv.Spec.CSI.Driver)
	require.NotNil(t, pv.Spec.NodeAffinity, "the volume is pinned to its node")

	source, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "source", metav1.GetOptions{})
	require.NoError(t, err)
	sourceOut, _ := runPod("source-reader", "source", "cat /data/marker", "")
	assert.Equal(t, "second", sourceOut, "the source keeps its own later writes (claim %s)", source.Name)

	// A Block claim: the same flow on the disk's bytes.
	claim("disk", corev1.PersistentVolumeBlock, nil)
	_, diskNode := runPod("disk-writer", "disk", "echo first-block | dd of=/dev/xvda conv=fsync 2>/dev/null", "")
	takeSnapshot("disk-snap", "disk")
	runPod("disk-later-writer", "disk", "echo later-block | dd of=/dev/xvda conv=fsync 2>/dev/null", "")
	claim("disk-restored", corev1.PersistentVolumeBlock, &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "disk-snap"})
	out, _ = runPod("disk-reader", "disk-restored", "head -c 11 /dev/xvda", diskNode)
	assert.Equal(t, "first-block", out, "the restored Block claim holds the bytes from before the snapshot")
}
