package vmi

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt/migratable"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// setMigratable records on a Running instance's status whether it can be live migrated (the
// LiveMigratable condition, which virt-api's migration create and eviction checks read) and
// how (status.migrationMethod). The verdict depends on the spec and on the access modes of
// the claims, read from the controller's cache; a claim that cannot be read counts as not
// shared, so a doubt never lets a migration start.
func (c *Controller) setMigratable(vmi *v1.VirtualMachineInstance, s *v1.VirtualMachineInstanceStatus, now metav1.Time) {
	if s.Phase != v1.Running {
		return
	}
	result := migratable.Evaluate(&vmi.Spec, func(name string) ([]corev1.PersistentVolumeAccessMode, bool) {
		claim, err := c.pvcLister.PersistentVolumeClaims(vmi.Namespace).Get(name)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				klog.ErrorS(err, "Cannot read a claim of the instance", "vmi", klog.KObj(vmi), "claim", name)
			}
			return nil, false
		}
		return claim.Spec.AccessModes, true
	})
	s.SetCondition(result.Condition(), now)
	s.MigrationMethod = result.Method
}
