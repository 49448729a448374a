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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// uefiGuestImage is the UEFI containerDisk hack/install-local.sh imports (hack/guest/build-uefi.sh):
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

// TestUEFIGuest runs the UEFI guest as a VM on the local cluster (TCG): its state claim is
// virt-controller's, the guest itself sees
// Secure Boot enforced and its TPM answer, software emulation's dropped Hyper-V feature is
// named on the instance, the guest agent connects (its OS in the status and through virtctl,
// its addresses merged into the interfaces), and after a restart of the VM the EFI variable
// and the TPM NV index the first boot wrote are there: both live on the VM's state claim.
func TestUEFIGuest(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-uefi")
	vm, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, uefiVM("uefi"), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = hangar.KubevirtV1().VirtualMachines(ns).Delete(context.Background(), vm.Name, metav1.DeleteOptions{})
	})
	t.Cleanup(func() { dumpNamespace(t, ns) }) // before the VM goes

	// virt-controller makes the state claim, from the cluster's default StorageClass
	// (local-path: a directory on the node of the claim's first pod, which later launcher
	// pods of the VM follow).
	var claim *corev1.PersistentVolumeClaim
	require.Eventually(t, func() bool {
		claim, err = kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "persistent-state-for-uefi", metav1.GetOptions{})
		return err == nil
	}, 60*time.Second, 250*time.Millisecond, "virt-controller creates the state claim")
	if owner := metav1.GetControllerOf(claim); assert.NotNil(t, owner) {
		assert.Equal(t, vm.UID, owner.UID, "the claim goes with the VM")
	}

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

// TestUEFIGuestWithoutSecureBoot: the same image boots with secureBoot false (OVMF without
// enrolled keys, no SMM asked for), and the guest reports Secure Boot off; its TPM, not
// persistent, answers too.
func TestUEFIGuestWithoutSecureBoot(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-uefi-plain")
	spec := uefiVM("uefi-plain").Spec.Template.Spec
	spec.Domain.Firmware.Bootloader.EFI = &v1.EFI{SecureBoot: ptr.To(false)}
	spec.Domain.Features = nil
	spec.Domain.Devices.TPM = &v1.TPMDevice{}
	_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "uefi-plain"}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { dumpNamespace(t, ns) })

	console := attach(t, ns, "uefi-plain", "console")
	console.waitFor(t, "HANGAR-GUEST-EFI secureboot=0 var=none", 300*time.Second)
	console.waitFor(t, "HANGAR-GUEST-TPM random=ok nv=none", 30*time.Second)
	console.waitFor(t, banner, 30*time.Second)
	vmi, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "uefi-plain", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, vmiCondition(vmi, v1.VirtualMachineInstanceFeaturesDropped), "nothing KVM-only was asked for")
}

// TestGuestHardwareManifestsDryRun: the manifests with the fields of KubeVirt's Windows,
// Secure Boot and Windows 11 examples (test/testdata/guest-hardware) apply with
// --dry-run=server to the cluster, through kube-apiserver's aggregation to virt-api.
func TestGuestHardwareManifestsDryRun(t *testing.T) {
	ns := namespace(t, "e2e-guest-hardware")
	out, err := kubectl(t, "apply", "--dry-run=server", "-n", ns, "-f", "../testdata/guest-hardware")
	require.NoError(t, err, out)
	for _, name := range []string{"virtualmachineinstance.kubevirt.io/windows", "virtualmachineinstance.kubevirt.io/secureboot", "virtualmachine.kubevirt.io/windows11"} {
		assert.Contains(t, out, name+" created (server dry run)")
	}
	out, err = kubectl(t, "get", "vm,vmi", "-n", ns, "-o", "name")
	require.NoError(t, err, out)
	assert.Empty(t, strings.TrimSpace(out), "a dry run creates nothing")
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
		// A launcher pod whose guest failed to start is gone by now; the handlers logged why.
		{"logs", "-n", "hangar", "-l", "app.kubernetes.io/name=virt-handler", "--tail=60", "--prefix"},
	} {
		out, err := kubectl(t, args...)
		t.Logf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
