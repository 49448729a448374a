//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	snapshotclient "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned"
)

// snapshotClass is the StorageClass and VolumeSnapshotClass of the local cluster's snapshot
// add-on (hack/tools/internal/cluster/snapshots.go): claims of the hangar-local-csi driver.
const snapshotClass = "hangar-snapshot"

// requireVolumeSnapshots fails the test when the cluster lacks Kubernetes' snapshot machinery:
// hack/test.sh brings its cluster up with the snapshot add-on, so a missing one is a fault.
func requireVolumeSnapshots(t *testing.T) {
	t.Helper()
	if _, err := kube.Discovery().ServerResourcesForGroupVersion("snapshot.storage.k8s.io/v1"); err != nil {
		t.Fatalf("the cluster does not serve snapshot.storage.k8s.io/v1; HANGAR_CLUSTER_SNAPSHOTS=1 hack/cluster/up.sh adds the snapshot add-on: %v", err)
	}
}

// agentGuestSpec is the kernelBoot test guest with qemu-guest-agent running
// (hack/guest/import-images.sh).
func agentGuestSpec() v1.VirtualMachineInstanceSpec {
	spec := guestSpec()
	spec.Domain.Firmware.KernelBoot.Container.InitrdPath = "/boot/initramfs-agent.cpio.gz"
	return spec
}

// snapshotDiskVM is a running VM of the agent guest whose only disk is the Block claim, kept on
// node: the add-on's volumes and snapshots live on one node's disk, and a claim restored from a
// snapshot can be made only there (kube-scheduler does not know where a snapshot is), so the
// VM and the VMs restored from its snapshots (which keep its spec) stay on that node, as with
// any node-local storage.
func snapshotDiskVM(name, claim, node string) *v1.VirtualMachine {
	spec := agentGuestSpec()
	spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	spec.Domain.Devices.Disks = []v1.Disk{{Name: "data", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}}
	spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: spec}},
	}
}

// snapshotClaim makes a Block claim of the snapshot add-on's class, owned by owner if not nil
// (as a VM owns its DataVolume templates' claims).
func snapshotClaim(t *testing.T, ns, name string, size int64, owner *v1.VirtualMachine) {
	t.Helper()
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(snapshotClass),
			VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)}},
		},
	}
	if owner != nil {
		c.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, v1.SchemeGroupVersion.WithKind("VirtualMachine"))}
	}
	_, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), c, metav1.CreateOptions{})
	require.NoError(t, err)
}

// firstNode names the cluster's first node, where the snapshot tests keep their VMs.
func firstNode(t *testing.T) string {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)
	return nodes.Items[0].Labels[corev1.LabelHostname]
}

// diskConsole waits for the guest's banner and loads its disk drivers (the kernelBoot guest
// loads them only when it boots from a disk): its claim is /dev/vda, of size bytes.
func diskConsole(t *testing.T, ns, name string, size int64) *stream {
	t.Helper()
	console := attach(t, ns, name, "console")
	console.waitFor(t, banner, 180*time.Second)
	console.typeUntil(t, loadDiskDrivers+"; "+
		"echo disk-$(cat /sys/block/vda/size)", fmt.Sprintf("disk-%d", size/512))
	return console
}

// runInGuest types command once on a shell that answers and waits until it has succeeded: the
// shell then prints a sum only it computes, which the echo of the typed line does not hold.
func runInGuest(t *testing.T, console *stream, command string, timeout time.Duration) {
	t.Helper()
	a, b := rand.IntN(9000)+1000, rand.IntN(9000)+1000
	require.NoError(t, console.conn.WriteMessage(gwebsocket.BinaryMessage,
		[]byte(fmt.Sprintf("%s && echo done-$((%d+%d))\r", command, a, b))))
	console.waitFor(t, fmt.Sprintf("done-%d", a+b), timeout)
}

// writeMarker writes marker at the start of the guest's disk, past its page cache.
func writeMarker(t *testing.T, console *stream, marker string) {
	t.Helper()
	runInGuest(t, console, fmt.Sprintf("printf %s %s | dd of=/dev/vda bs=512 conv=fsync 2>/dev/null", "%s", marker), 30*time.Second)
}

// readMarker reads the first n bytes of the guest's disk: the guest prints them between
// brackets after a token of this read, which the typed command's echo does not match.
func readMarker(t *testing.T, console *stream, n int) string {
	t.Helper()
	token := "read-" + utilrand.String(6)
	runInGuest(t, console, fmt.Sprintf(`echo "%s[$(dd if=/dev/vda bs=512 count=1 2>/dev/null | head -c %d)]"`, token, n), 10*time.Second)
	m := regexp.MustCompile(regexp.QuoteMeta(token) + `\[([A-Za-z0-9-]*)\]`).FindStringSubmatch(console.output())
	require.NotNil(t, m, "the guest prints what its disk holds; saw %q", console.output())
	return m[1]
}

// freezeWatch records when a VMI's status says its guest's file systems froze and thawed.
type freezeWatch struct {
	mu             sync.Mutex
	frozen, thawed time.Time
}

func watchFreeze(t *testing.T, ns, name string) *freezeWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	require.NoError(t, err)
	f := &freezeWatch{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			vmi, ok := ev.Object.(*v1.VirtualMachineInstance)
			if !ok {
				continue
			}
			f.mu.Lock()
			switch frozen := vmi.Status.FSFreezeStatus == v1.FSFrozen; {
			case frozen && f.frozen.IsZero():
				f.frozen = time.Now()
			case !frozen && !f.frozen.IsZero() && f.thawed.IsZero():
				f.thawed = time.Now()
			}
			f.mu.Unlock()
		}
	}()
	return f
}

func (f *freezeWatch) times() (frozen, thawed time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen, f.thawed
}

// TestSnapshotAndRestore: a VM whose disk is a 1 GiB claim of the snapshot add-on's class is
// snapshotted while it runs, its guest frozen through the guest agent for the cut; what the
// guest writes afterwards is not in the snapshot. A restore into a new VM boots beside the
// running original with the first marker; the original, stopped, restored and started again,
// has its first marker back. Prints the figures docs/performance.md keeps.
func TestSnapshotAndRestore(t *testing.T) {
	requireVolumeSnapshots(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-snapshot")
	t.Cleanup(func() { dumpNamespace(t, ns) })
	snapshots := snapshotclient.NewForConfigOrDie(config).SnapshotV1beta1()
	vms := hangar.KubevirtV1().VirtualMachines(ns)

	snapshotClaim(t, ns, "db-disk", 1<<30, nil)
	_, err := vms.Create(ctx, snapshotDiskVM("db", "db-disk", firstNode(t)), metav1.CreateOptions{})
	require.NoError(t, err)

	suffix := utilrand.String(8)
	first, second := "HANGAR-FIRST-"+suffix, "HANGAR-AFTER-"+suffix
	console := diskConsole(t, ns, "db", 1<<30)
	// Every block written, so the snapshot and the restores copy the whole 1 GiB.
	fill := time.Now()
	runInGuest(t, console, "dd if=/dev/zero of=/dev/vda bs=1M count=1024 conv=fsync 2>/dev/null", 10*time.Minute)
	t.Logf("the guest filled its 1 GiB disk in %s", time.Since(fill).Round(100*time.Millisecond))
	writeMarker(t, console, first)
	original := waitVMI(t, ns, "db", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		c := vmiCondition(v, v1.VirtualMachineInstanceAgentConnected)
		return c != nil && c.Status == corev1.ConditionTrue
	})

	// The snapshot, online, with the guest frozen for the cut.
	freeze := watchFreeze(t, ns, "db")
	start := time.Now()
	_, err = snapshots.VirtualMachineSnapshots(ns).Create(ctx, &snapshotv1beta1.VirtualMachineSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "before-upgrade"},
		Spec: snapshotv1beta1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{
			APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var snap *snapshotv1beta1.VirtualMachineSnapshot
	require.Eventually(t, func() bool {
		snap, err = snapshots.VirtualMachineSnapshots(ns).Get(ctx, "before-upgrade", metav1.GetOptions{})
		return err == nil && snap.Status != nil && (ptr.Deref(snap.Status.ReadyToUse, false) || snap.Status.Phase == snapshotv1beta1.Failed)
	}, 5*time.Minute, 200*time.Millisecond, "the snapshot is ready (last: %+v)", snap)
	took := time.Since(start)
	require.Equal(t, snapshotv1beta1.Succeeded, snap.Status.Phase, "%+v", snap.Status)
	assert.ElementsMatch(t, []snapshotv1beta1.Indication{snapshotv1beta1.VMSnapshotOnlineSnapshotIndication,
		snapshotv1beta1.VMSnapshotGuestAgentIndication}, snap.Status.Indications)
	var frozen, thawed time.Time
	require.Eventually(t, func() bool {
		frozen, thawed = freeze.times()
		return !thawed.IsZero()
	}, 30*time.Second, 100*time.Millisecond, "the instance's status shows the guest frozen, then thawed")
	figure(t, "snapshot of a running VM, 1 GiB disk (create → readyToUse)", took.Round(100*time.Millisecond), "")
	figure(t, "guest frozen (the instance's fsFreezeStatus, frozen → thawed)", thawed.Sub(frozen).Round(100*time.Millisecond), "")

	writeMarker(t, console, second)
	assert.Equal(t, second, readMarker(t, console, len(second)))

	// A restore into a new VM while the original keeps running.
	restore := func(name, target string) {
		t.Helper()
		_, err := snapshots.VirtualMachineRestores(ns).Create(ctx, &snapshotv1beta1.VirtualMachineRestore{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: snapshotv1beta1.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "before-upgrade",
				Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: target}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		var r *snapshotv1beta1.VirtualMachineRestore
		require.Eventually(t, func() bool {
			r, err = snapshots.VirtualMachineRestores(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && ptr.Deref(r.Status.Complete, false)
		}, 5*time.Minute, 200*time.Millisecond, "restore %s completes (last: %+v)", name, r)
	}
	running := func(name string) {
		t.Helper()
		waitVMI(t, ns, name, 5*time.Minute, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	}
	start = time.Now()
	restore("to-new", "db-restored")
	running("db-restored")
	figure(t, "restore into a new VM, 1 GiB disk (create → its instance Running, the claim made from the snapshot)", time.Since(start).Round(100*time.Millisecond), "")
	copyConsole := diskConsole(t, ns, "db-restored", 1<<30)
	assert.Equal(t, first, readMarker(t, copyConsole, len(first)), "the new VM's disk is the snapshot's")
	assert.NotContains(t, copyConsole.output(), second)
	copyVM, err := vms.Get(ctx, "db-restored", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, copyVM.Spec.Template.Spec.Volumes, 1)
	assert.NotEqual(t, "db-disk", copyVM.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, "the new VM has a claim of its own")
	waitVMI(t, ns, "db", 5*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.UID == original.UID && v.Status.Phase == v1.Running
	})
	assert.Equal(t, second, readMarker(t, console, len(second)), "the original keeps what it wrote")

	// The original, stopped and restored in place, starts with the snapshot's disk.
	out, err := virtctl(t, "stop", "db", "-n", ns)
	require.NoError(t, err, out)
	deleteWait := time.Now()
	require.Eventually(t, func() bool {
		_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "db", metav1.GetOptions{})
		return err != nil
	}, 2*time.Minute, 500*time.Millisecond, "the original stops")
	t.Logf("the original stopped in %s", time.Since(deleteWait).Round(100*time.Millisecond))
	start = time.Now()
	restore("in-place", "db")
	vm, err := vms.Get(ctx, "db", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, vm.Status.RestoreInProgress)
	out, err = virtctl(t, "start", "db", "-n", ns)
	require.NoError(t, err, out)
	running("db")
	figure(t, "restore of the stopped VM and its start, 1 GiB disk (create → its instance Running)", time.Since(start).Round(100*time.Millisecond), "")
	console = diskConsole(t, ns, "db", 1<<30)
	assert.Equal(t, first, readMarker(t, console, len(first)), "the original's disk is the snapshot's again")
	assert.NotContains(t, console.output(), second)
}

// scaleSnapshotController sets the replicas of the snapshot add-on's snapshot controller
// (Kubernetes' own, in hangar-csi) and waits until that many are available.
func scaleSnapshotController(t *testing.T, replicas int32) {
	t.Helper()
	ctx := context.Background()
	deployments := kube.AppsV1().Deployments("hangar-csi")
	scale, err := deployments.GetScale(ctx, "snapshot-controller", metav1.GetOptions{})
	require.NoError(t, err)
	scale.Spec.Replicas = replicas
	_, err = deployments.UpdateScale(ctx, "snapshot-controller", scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := deployments.Get(ctx, "snapshot-controller", metav1.GetOptions{})
		if err != nil {
			return false
		}
		pods, err := kube.CoreV1().Pods("hangar-csi").List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		return err == nil && d.Status.AvailableReplicas == replicas && len(pods.Items) == int(replicas)
	}, 2*time.Minute, 500*time.Millisecond, "snapshot-controller at %d replicas", replicas)
}

// TestDeletingAVMDuringItsSnapshotLosesNothing: a VM deleted while its snapshot is in progress
// waits for the snapshot (KubeVirt's snapshot-source-protection finalizer), so the claim it
// owns (as a DataVolume template's claim is owned) is still there when the storage cuts the
// snapshot; the snapshot then restores into a new VM with the data. The storage is made slow
// by stopping Kubernetes' snapshot controller until the VM's delete has been asked for.
func TestDeletingAVMDuringItsSnapshotLosesNothing(t *testing.T) {
	requireVolumeSnapshots(t)
	ctx := context.Background()
	ns := namespace(t, "e2e-snapshot-delete")
	t.Cleanup(func() { dumpNamespace(t, ns) })
	snapshots := snapshotclient.NewForConfigOrDie(config).SnapshotV1beta1()
	vms := hangar.KubevirtV1().VirtualMachines(ns)

	vm, err := vms.Create(ctx, snapshotDiskVM("doomed", "doomed-disk", firstNode(t)), metav1.CreateOptions{})
	require.NoError(t, err)
	snapshotClaim(t, ns, "doomed-disk", 64<<20, vm)
	marker := "HANGAR-KEPT-" + utilrand.String(8)
	console := diskConsole(t, ns, "doomed", 64<<20)
	writeMarker(t, console, marker)

	scaleSnapshotController(t, 0)
	t.Cleanup(func() { scaleSnapshotController(t, 1) })
	_, err = snapshots.VirtualMachineSnapshots(ns).Create(ctx, &snapshotv1beta1.VirtualMachineSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "last-words"},
		Spec: snapshotv1beta1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{
			APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "doomed"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		vm, err := vms.Get(ctx, "doomed", metav1.GetOptions{})
		return err == nil && ptr.Deref(vm.Status.SnapshotInProgress, "") == "last-words" && slices.Contains(vm.Finalizers, "snapshot.kubevirt.io/snapshot-source-protection")
	}, time.Minute, 200*time.Millisecond, "the VM is held for its snapshot")

	require.NoError(t, vms.Delete(ctx, "doomed", metav1.DeleteOptions{}))
	// The VM stops, and stays while the snapshot waits for the storage; so does its claim.
	require.Eventually(t, func() bool {
		_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 2*time.Minute, 500*time.Millisecond, "the VM's instance goes")
	time.Sleep(3 * time.Second) // what garbage collection would do, it has had time to
	got, err := vms.Get(ctx, "doomed", metav1.GetOptions{})
	require.NoError(t, err, "the VM waits for its snapshot")
	assert.NotNil(t, got.DeletionTimestamp)
	c, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "doomed-disk", metav1.GetOptions{})
	require.NoError(t, err, "the claim the VM owns is still there")
	assert.Nil(t, c.DeletionTimestamp)

	scaleSnapshotController(t, 1)
	var snap *snapshotv1beta1.VirtualMachineSnapshot
	require.Eventually(t, func() bool {
		snap, err = snapshots.VirtualMachineSnapshots(ns).Get(ctx, "last-words", metav1.GetOptions{})
		return err == nil && snap.Status != nil && ptr.Deref(snap.Status.ReadyToUse, false)
	}, 3*time.Minute, 500*time.Millisecond, "the snapshot is cut once the storage answers (last: %+v)", snap)
	require.Eventually(t, func() bool {
		_, errVM := vms.Get(ctx, "doomed", metav1.GetOptions{})
		_, errClaim := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "doomed-disk", metav1.GetOptions{})
		return apierrors.IsNotFound(errVM) && apierrors.IsNotFound(errClaim)
	}, 2*time.Minute, 500*time.Millisecond, "then the VM and its claim go, as asked")

	_, err = snapshots.VirtualMachineRestores(ns).Create(ctx, &snapshotv1beta1.VirtualMachineRestore{
		ObjectMeta: metav1.ObjectMeta{Name: "revive"},
		Spec: snapshotv1beta1.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: "last-words",
			Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "revived"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	console = diskConsole(t, ns, "revived", 64<<20)
	assert.Equal(t, marker, readMarker(t, console, len(marker)), "what the deleted VM wrote")
}
