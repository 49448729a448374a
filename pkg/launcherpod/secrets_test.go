package launcherpod

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

func cloudInit(name string, src v1.CloudInitNoCloudSource) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{CloudInitNoCloud: &src}}
}

func secretRef(name string) *corev1.LocalObjectReference {
	return &corev1.LocalObjectReference{Name: name}
}

// TestCloudInitSecretVolumes: each Secret the cloud-init volumes name is a secret volume of the
// pod, once, mounted read-only at /var/run/hangar/secrets/<secret> in the compute container
// only; its volume's name cannot clash with the instance's claims.
func TestCloudInitSecretVolumes(t *testing.T) {
	tests := []struct {
		name        string
		vmi         func(*v1.VirtualMachineInstance)
		modes       VolumeModes
		wantVolumes []corev1.Volume // besides the socket directory
		wantMounts  []corev1.VolumeMount
		wantErr     string
	}{
		{
			name: "inline data needs no volume",
			vmi:  withVolumes(cloudInit("ci", v1.CloudInitNoCloudSource{UserData: "#cloud-config\n", NetworkDataBase64: "bmV0d29yazoK"})),
		},
		{
			name: "user and network data from two Secrets",
			vmi: withVolumes(cloudInit("ci", v1.CloudInitNoCloudSource{
				UserDataSecretRef: secretRef("user-data"), NetworkDataSecretRef: secretRef("net.data"),
			})),
			wantVolumes: []corev1.Volume{
				{Name: "hangar-secret-0", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "user-data"}}},
				{Name: "hangar-secret-1", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "net.data"}}},
			},
			wantMounts: []corev1.VolumeMount{
				{Name: "hangar-secret-0", MountPath: "/var/run/hangar/secrets/user-data", ReadOnly: true},
				{Name: "hangar-secret-1", MountPath: "/var/run/hangar/secrets/net.data", ReadOnly: true},
			},
		},
		{
			name: "one Secret named twice, by two volumes, is one volume; claims keep their names",
			vmi: withVolumes(
				cloudInit("ci", v1.CloudInitNoCloudSource{UserDataSecretRef: secretRef("seed"), NetworkDataSecretRef: secretRef("seed")}),
				pvc("data", "claim-a", false),
				cloudInit("ci2", v1.CloudInitNoCloudSource{UserDataSecretRef: secretRef("seed")}),
			),
			modes: VolumeModes{"claim-a": corev1.PersistentVolumeFilesystem},
			wantVolumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-a"}}},
				{Name: "hangar-secret-0", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "seed"}}},
			},
			wantMounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/var/run/kubevirt-private/vmi-disks/data"},
				{Name: "hangar-secret-0", MountPath: "/var/run/hangar/secrets/seed", ReadOnly: true},
			},
		},
		{
			name: "a claim may not take a secret volume's name",
			vmi: withVolumes(
				pvc("hangar-secret-0", "claim-a", false),
				cloudInit("ci", v1.CloudInitNoCloudSource{UserDataSecretRef: secretRef("seed")}),
			),
			modes:   VolumeModes{"claim-a": corev1.PersistentVolumeFilesystem},
			wantErr: `volume name "hangar-secret-0" is reserved`,
		},
		{
			name:    "a Secret's name cannot lead the mount elsewhere",
			vmi:     withVolumes(cloudInit("ci", v1.CloudInitNoCloudSource{UserDataSecretRef: secretRef("../../../etc")})),
			wantErr: `cloud-init secret name "../../../etc"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := clusterconfig.Defaults()
			pod, err := Build(testVMI(tt.vmi), tt.modes, &cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			// After the launcher's own volumes (TestBuild checks them).
			require.GreaterOrEqual(t, len(pod.Spec.Volumes), len(launcherVolumes))
			if tt.wantVolumes == nil {
				tt.wantVolumes = []corev1.Volume{}
			}
			assert.Equal(t, tt.wantVolumes, pod.Spec.Volumes[len(launcherVolumes):])
			compute := pod.Spec.Containers[0]
			assert.Equal(t, append(launcherMounts(), tt.wantMounts...), compute.VolumeMounts)
			for _, c := range pod.Spec.InitContainers {
				for _, m := range c.VolumeMounts {
					assert.NotContains(t, m.Name, layout.SecretVolumePrefix, "no init container sees the Secrets: %s", c.Name)
				}
			}
			assert.False(t, *pod.Spec.AutomountServiceAccountToken, "the launcher still has no API access")
		})
	}
}
