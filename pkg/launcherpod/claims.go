package launcherpod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// ClaimVolumeModes reads, from claims, the volumeMode of every claim the instance names (Build
// mounts or maps each by it), or names the first claim that does not exist.
func ClaimVolumeModes(claims corelisters.PersistentVolumeClaimLister, vmi *v1.VirtualMachineInstance) (modes VolumeModes, missing string, err error) {
	modes = VolumeModes{}
	for _, name := range ClaimNames(vmi) {
		claim, err := claims.PersistentVolumeClaims(vmi.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil, name, nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("read claim %s/%s: %w", vmi.Namespace, name, err)
		}
		modes[name] = ptr.Deref(claim.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
	}
	return modes, "", nil
}
