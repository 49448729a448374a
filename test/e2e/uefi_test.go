//go:build e2e

package e2e

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
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// uefiGuestImage is the UEFI containerDisk hack/deploy.sh imports (hack/guest/build-uefi.sh):
// Debian's signed shim, GRUB and kernel, and an initramfs that reports Secure Boot, an EFI
// variable and the TPM on the console and runs qemu-guest-agent.
const uefiGuestImage = "hangar.local/uefi-guest:dev"

// uefiVM is a VM of the UEFI guest with Secure Boot and a TPM, both persistent, and a Hyper-V
// enlightenment, which software emulation drops.
func uefiVM(name string) *v1.VirtualMachine {
	return &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.VirtualMachineSpec{
			RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{
				Domain: v1.DomainSpec{
					Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
					Firmware: &v1.Firmware{UUID: types.UID("7d3c3c2e-6f0a-4b8e-9a51-2f4d8c1e9b70"),
						Bootloader: &v1.Bootloader{EFI: &v1.EFI{SecureBoot: ptr.To(true), Persistent: ptr.To(true)}}},
					Features: &v1.Features{SMM: &v1.FeatureState{}, Hyperv: &v1.FeatureHyperv{Relaxed: &v1.FeatureState{}}},
					Devices: v1.Devices{
						TPM:   &v1.TPMDevice{Persistent: ptr.To(true)},
						Disks: []v1.Disk{{Name: "root", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}},
					},
				},
				Volumes: []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{
					Image: uefiGuestImage, ImagePullPolicy: corev1.PullNever}}}},
				TerminationGracePeriodSeconds: ptr.To[int64](30),
			}},
		},
	}
}

// createLocalDirPV makes a local, filesystem PersistentVolume of a new directory on the
// cluster's node and its claim ns/claim, and removes them when the test is over.
func createLocalDirPV(t *testing.T, name, ns, claim string) {
	t.Helper()
	ctx := context.Background()
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)
	// The directory is the host's, seen by every node of the local cluster; the volume is
	// one node's, as a local disk would be.
	host := nodes.Items[0].Labels[corev1.LabelHostname]
	require.NotEmpty(t, host)
	dir, err := os.MkdirTemp("", "hangar-e2e-state-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	size := resource.MustParse("16Mi")
	_, err = kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			VolumeName:       name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, metav1.CreateOptions{})
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

// TestUEFIGuest runs the UEFI guest as a VM on the local cluster (TCG): the guest itself sees
// Secure Boot enforced and its TPM answer, software emulation's dropped Hyper-V feature is
// named on the instance, the guest agent connects (its OS in the status and through virtctl,
// its addresses merged into the interfaces), and after a restart of the VM the EFI variable
// and the TPM NV index the first boot wrote are there: both live on the VM's state claim.
func TestUEFIGuest(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-uefi")
	createLocalDirPV(t, "e2e-uefi-"+utilrand.String(5), ns, "persistent-state-for-uefi")
	vm, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, uefiVM("uefi"), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = hangar.KubevirtV1().VirtualMachines(ns).Delete(context.Background(), vm.Name, metav1.DeleteOptions{})
	})
	t.Cleanup(func() { dumpNamespace(t, ns) }) // before the VM goes

	console := attach(t, ns, "uefi", "console")
	console.waitFor(t, "HANGAR-GUEST-EFI secureboot=1 var=none", 300*time.Second)
	console.waitFor(t, "HANGAR-GUEST-TPM random=ok nv=none", 30*time.Second)
	console.waitFor(t, banner, 30*time.Second)

	vmi := waitVMI(t, ns, "uefi", 90*time.Second, func(v *v1.VirtualMachineInstance) bool {
		c := vmiCondition(v, v1.VirtualMachineInstanceAgentConnected)
		return c != nil && c.Status == corev1.ConditionTrue && v.Status.GuestOSInfo.ID != ""
	})
	assert.Equal(t, "hangar-test", vmi.Status.GuestOSInfo.ID)
	if dropped := vmiCondition(vmi, v1.VirtualMachineInstanceFeaturesDropped); assert.NotNil(t, dropped, "software emulation drops hyperv") {
		assert.Contains(t, dropped.Message, "spec.domain.features.hyperv")
	}
	vmi = waitVMI(t, ns, "uefi", 60*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return len(v.Status.Interfaces) > 0 && strings.Contains(v.Status.Interfaces[0].InfoSource, "guest-agent")
	})
	out, err := kubectl(t, "get", "vmi", "-n", ns, "uefi", "-o", "wide")
	require.NoError(t, err, out)
	assert.Contains(t, out, vmi.Status.Interfaces[0].IP)

	out, err = virtctl(t, "-n", ns, "guestosinfo", "uefi")
	require.NoError(t, err, out)
	assert.Contains(t, out, `"prettyName": "Hangar UEFI test guest`)
	out, err = virtctl(t, "-n", ns, "fslist", "uefi")
	require.NoError(t, err, out)

	// A restart: a new instance, a new launcher pod, the same state claim.
	out, err = virtctl(t, "-n", ns, "restart", "uefi")
	require.NoError(t, err, out)
	waitVMI(t, ns, "uefi", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.UID != vmi.UID && v.Status.Phase == v1.Running
	})
	console = attach(t, ns, "uefi", "console")
	console.waitFor(t, "HANGAR-GUEST-EFI secureboot=1 var=persisted", 300*time.Second)
	console.waitFor(t, "HANGAR-GUEST-TPM random=ok nv=HANGARNV", 30*time.Second)
}

// dumpNamespace logs what a failed test's namespace holds: objects, events, the launcher's
// logs, so a failure on the cluster can be understood after the cluster is gone.
func dumpNamespace(t *testing.T, ns string) {
	if !t.Failed() {
		return
	}
	for _, args := range [][]string{
		{"get", "vm,vmi,pods,pvc", "-n", ns, "-o", "wide"},
		{"get", "vmi", "-n", ns, "-o", "yaml"},
		{"describe", "pods", "-n", ns},
		{"get", "events", "-n", ns, "--sort-by=.lastTimestamp"},
		{"logs", "-n", ns, "-l", v1.AppLabel + "=" + v1.LauncherAppLabelValue, "--all-containers", "--tail=80"},
	} {
		out, err := kubectl(t, args...)
		t.Logf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
