package launcherpod

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

func TestStateClaim(t *testing.T) {
	persistentEFI := func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{SecureBoot: ptr.To(false), Persistent: ptr.To(true)}}}
	}
	tests := []struct {
		name      string
		mutate    func(*v1.VirtualMachineInstance)
		modes     VolumeModes
		wantClaim bool
		wantErr   string
	}{
		{name: "EFI without persistence: no claim", mutate: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{SecureBoot: ptr.To(false)}}}
			v.Spec.Domain.Devices.TPM = &v1.TPMDevice{}
		}},
		{name: "persistent EFI variables", mutate: persistentEFI,
			modes: VolumeModes{"persistent-state-for-vm1": corev1.PersistentVolumeFilesystem}, wantClaim: true},
		{name: "persistent TPM", mutate: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.TPM = &v1.TPMDevice{Persistent: ptr.To(true)}
		},
			modes: VolumeModes{"persistent-state-for-vm1": ""}, wantClaim: true},
		{name: "a block claim cannot hold the state", mutate: persistentEFI,
			modes: VolumeModes{"persistent-state-for-vm1": corev1.PersistentVolumeBlock}, wantErr: "must be Filesystem"},
		{name: "the claim's mode must be known", mutate: persistentEFI, wantErr: "unknown"},
		{name: "a volume of the spec cannot take the state volume's name", mutate: func(v *v1.VirtualMachineInstance) {
			v.Spec.Volumes = []v1.Volume{{Name: layout.VMStateVolume, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "other"}}}}}
		}, modes: VolumeModes{"other": corev1.PersistentVolumeFilesystem}, wantErr: "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := testVMI(tt.mutate)
			cfg := clusterconfig.Defaults()
			pod, err := Build(vmi, tt.modes, &cfg)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			c := pod.Spec.Containers[0]
			var vol *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == layout.VMStateVolume {
					vol = &pod.Spec.Volumes[i]
				}
			}
			if !tt.wantClaim {
				assert.Nil(t, vol)
				assert.NotContains(t, c.Args, "--vm-state-dir="+VMStateMountPath)
				assert.NotContains(t, ClaimNames(vmi), "persistent-state-for-vm1")
				return
			}
			require.NotNil(t, vol)
			assert.Equal(t, "persistent-state-for-vm1", vol.PersistentVolumeClaim.ClaimName)
			assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: layout.VMStateVolume, MountPath: VMStateMountPath})
			assert.Contains(t, c.Args, "--vm-state-dir="+VMStateMountPath)
			assert.Equal(t, []string{"persistent-state-for-vm1"}, ClaimNames(vmi), "the instance waits for it like any claim")
		})
	}
}

// TestTPMTmp: a guest with a TPM gets a writable /tmp (swtpm_setup's pid file and
// temporary files; the root file system is read-only), a guest without one none.
func TestTPMTmp(t *testing.T) {
	for _, tt := range []struct {
		name string
		tpm  *v1.TPMDevice
		want bool
	}{
		{"TPM", &v1.TPMDevice{}, true},
		{"persistent TPM", &v1.TPMDevice{Persistent: ptr.To(true)}, true},
		{"disabled TPM", &v1.TPMDevice{Enabled: ptr.To(false)}, false},
		{"no TPM", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vmi := testVMI(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.TPM = tt.tpm })
			modes := VolumeModes{}
			if vmi.Spec.NeedsStateClaim() {
				modes["persistent-state-for-vm1"] = corev1.PersistentVolumeFilesystem
			}
			cfg := clusterconfig.Defaults()
			pod, err := Build(vmi, modes, &cfg)
			require.NoError(t, err)
			mount := corev1.VolumeMount{Name: "hangar-tmp", MountPath: "/tmp"}
			var vol *corev1.Volume
			for i := range pod.Spec.Volumes {
				if pod.Spec.Volumes[i].Name == "hangar-tmp" {
					vol = &pod.Spec.Volumes[i]
				}
			}
			if !tt.want {
				assert.Nil(t, vol)
				assert.NotContains(t, pod.Spec.Containers[0].VolumeMounts, mount)
				return
			}
			require.NotNil(t, vol)
			require.NotNil(t, vol.EmptyDir, "an emptyDir: the pod stays within Pod Security restricted")
			assert.Equal(t, "16Mi", vol.EmptyDir.SizeLimit.String())
			assert.Contains(t, pod.Spec.Containers[0].VolumeMounts, mount)
		})
	}
}
