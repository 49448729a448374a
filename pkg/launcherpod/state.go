package launcherpod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// What a guest keeps across restarts of its VM (EFI variables with efi.persistent, the TPM's
// state with tpm.persistent) lives on the VM's state claim, KubeVirt's backend storage: a
// filesystem claim named after the VM, so every instance of the VM finds the same one. The
// launcher pod mounts it and virt-launcher keeps its nvram and swtpm directories there
// (pkg/launcher/state.go). Like any claim the instance names, a missing one keeps the
// instance Pending until it appears.
//
// VMStateMountPath is where the compute container has it.
const VMStateMountPath = "/var/run/hangar/vm-state"

// StateClaimName is the state claim of the instance's VM (an instance of a VM has the VM's
// name; a lone instance has its own).
func StateClaimName(vmi *v1.VirtualMachineInstance) string { return layout.StateClaimPrefix + vmi.Name }

// stateClaim is the state claim's volume, mount and launcher flag, when the instance keeps
// state; modes must hold the claim's volumeMode.
func stateClaim(vmi *v1.VirtualMachineInstance, modes VolumeModes) (*corev1.Volume, *corev1.VolumeMount, string, error) {
	if !vmi.Spec.NeedsStateClaim() {
		return nil, nil, "", nil
	}
	claim := StateClaimName(vmi)
	mode, ok := modes[claim]
	if !ok {
		return nil, nil, "", fmt.Errorf("instance %s/%s: the volumeMode of state claim %s is unknown", vmi.Namespace, vmi.Name, claim)
	}
	if mode != corev1.PersistentVolumeFilesystem && mode != "" {
		return nil, nil, "", fmt.Errorf("instance %s/%s: state claim %s has volumeMode %q; it must be Filesystem", vmi.Namespace, vmi.Name, claim, mode)
	}
	vol := &corev1.Volume{Name: layout.VMStateVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	mount := &corev1.VolumeMount{Name: layout.VMStateVolume, MountPath: VMStateMountPath}
	return vol, mount, "--vm-state-dir=" + VMStateMountPath, nil
}

// tmpVolumeSize bounds the TPM's /tmp: a pid file and the certificates of one manufacturing.
var tmpVolumeSize = resource.MustParse("16Mi")

// tpmTmp is a writable /tmp for a guest with a TPM. The root file system is read-only, and
// libvirt runs swtpm_setup (which makes the TPM's state and certificates on first use) with
// a cleared environment: it takes /tmp for its pid file and temporary files, and fails
// ("Could not create pidfile: Read-only file system") without one.
func tpmTmp(vmi *v1.VirtualMachineInstance) (*corev1.Volume, *corev1.VolumeMount) {
	if !vmi.Spec.HasTPM() {
		return nil, nil
	}
	vol := sizedEmptyDir(layout.TmpVolume, tmpVolumeSize)
	return &vol, &corev1.VolumeMount{Name: layout.TmpVolume, MountPath: "/tmp"}
}
