package launcherpod

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
)

// TestLauncherPodsMeetPodSecurityRestricted evaluates launcher pods with Pod Security
// admission's own policy code, as kube-apiserver does in a namespace labelled
// pod-security.kubernetes.io/enforce=restricted: every kind of instance Hangar runs gets a
// pod that the restricted level (hence baseline too) admits.
func TestLauncherPodsMeetPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks())
	require.NoError(t, err)
	restricted := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}

	tests := []struct {
		name   string
		mutate func(*v1.VirtualMachineInstance)
		modes  VolumeModes
	}{
		{name: "no devices"},
		{name: "kernelBoot", mutate: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Firmware = &v1.Firmware{KernelBoot: &v1.KernelBoot{Container: &v1.KernelBootContainer{Image: "reg/kernel", KernelPath: "/boot/vmlinux"}}}
		}},
		{name: "containerDisk, emptyDisk, cloud-init", mutate: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Volumes = []v1.Volume{
				{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "reg/disk"}}},
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}},
				{Name: "init", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config"}}},
			}
		}},
		{name: "claims, filesystem and block", mutate: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Volumes = []v1.Volume{
				{Name: "fs", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c-fs"}}}},
				{Name: "blk", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c-blk"}}}},
			}
		}, modes: VolumeModes{"c-fs": corev1.PersistentVolumeFilesystem, "c-blk": corev1.PersistentVolumeBlock}},
		{name: "persistent EFI variables and TPM on the VM's state claim", mutate: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{Persistent: ptr.To(true)}}}
			vmi.Spec.Domain.Devices.TPM = &v1.TPMDevice{Persistent: ptr.To(true)}
		}, modes: VolumeModes{"persistent-state-for-vm1": corev1.PersistentVolumeFilesystem}},
		{name: "masquerade interface", mutate: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}}
			vmi.Spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
		}},
		{name: "bridge interface", mutate: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}}}
			vmi.Spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
		}},
		{name: "guaranteed resources", mutate: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
			vmi.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")}
			vmi.Spec.Domain.Resources.OvercommitGuestOverhead = true
			vmi.Spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "reg/disk"}}}}
		}},
	}
	for _, emulation := range []bool{true, false} {
		for _, imageVolumes := range []bool{false, true} {
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%s/emulation=%t/imageVolumes=%t", tt.name, emulation, imageVolumes), func(t *testing.T) {
					cfg := clusterconfig.Defaults()
					cfg.UseEmulation = emulation
					cfg.ImageVolumes = imageVolumes
					pod, err := Build(testVMI(tt.mutate), tt.modes, &cfg)
					require.NoError(t, err)
					result := policy.AggregateCheckResults(evaluator.EvaluatePod(restricted, &pod.ObjectMeta, &pod.Spec))
					assert.True(t, result.Allowed, "restricted refuses the launcher pod: %s: %s", result.ForbiddenReason(), result.ForbiddenDetail())
				})
			}
		}
	}
}

// TestPodSecurityEvaluatorRefuses makes sure the check above can fail: the launcher pod of the
// past (a hostPath socket directory, root, default capabilities) is refused at baseline.
func TestPodSecurityEvaluatorRefuses(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks())
	require.NoError(t, err)
	cfg := clusterconfig.Defaults()
	pod, err := Build(testVMI(nil), nil, &cfg)
	require.NoError(t, err)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/hangar"}}})
	pod.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
	result := policy.AggregateCheckResults(evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelBaseline, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
	assert.False(t, result.Allowed)
	assert.Contains(t, result.ForbiddenReason(), "hostPath volumes")
}
