package launcherpod

import (
	"fmt"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// The Secrets a cloudInitNoCloud volume names (secretRef, networkDataSecretRef) reach the
// launcher as secret volumes of its pod, as in KubeVirt: the kubelet mounts them under the node
// authorizer's rules (a pod's own Secrets only), so no Hangar component reads Secrets through
// the API. A missing Secret keeps the pod in ContainerCreating until it appears.
const (
	// SecretsDir holds each named Secret at <SecretsDir>/<secret name>/<key> in the compute
	// container (pkg/launcher/cloudinit reads userdata or userData, networkdata or networkData).
	SecretsDir = layout.SecretsDir
	// SecretVolumePrefix starts the pod volume of each Secret: hangar-secret-<n>, n counting
	// the distinct Secrets in the order the instance's volumes name them.
	SecretVolumePrefix = layout.SecretVolumePrefix
)

// CloudInitSecretNames are the Secrets the instance's cloudInitNoCloud volumes name, each once.
func CloudInitSecretNames(vmi *v1.VirtualMachineInstance) []string {
	var names []string
	for _, vol := range vmi.Spec.Volumes {
		src := vol.CloudInitNoCloud
		if src == nil {
			continue
		}
		for _, ref := range []*corev1.LocalObjectReference{src.UserDataSecretRef, src.NetworkDataSecretRef} {
			if ref != nil && !slices.Contains(names, ref.Name) {
				names = append(names, ref.Name)
			}
		}
	}
	return names
}

// SecretVolume is the pod volume of the n-th Secret of CloudInitSecretNames.
func SecretVolume(n int) string { return fmt.Sprintf("%s%d", SecretVolumePrefix, n) }

// cloudInitSecrets are the secret volumes and their read-only mounts in the compute container.
func cloudInitSecrets(vmi *v1.VirtualMachineInstance) ([]corev1.Volume, []corev1.VolumeMount, error) {
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for n, name := range CloudInitSecretNames(vmi) {
		// The name becomes a directory of the launcher: a Secret's name has no '/' nor "..".
		if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			return nil, nil, fmt.Errorf("instance %s/%s: cloud-init secret name %q: %v", vmi.Namespace, vmi.Name, name, msgs)
		}
		volume := SecretVolume(n)
		volumes = append(volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: name},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: volume, MountPath: path.Join(SecretsDir, name), ReadOnly: true})
	}
	return volumes, mounts, nil
}
