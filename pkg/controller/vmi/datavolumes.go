package vmi

import (
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/controller/datavolume"
)

// An instance's dataVolume volume uses the claim of the DataVolume's name. Where the cluster
// serves CDI, the launcher pod is made only once each DataVolume is usable (filled, or waiting
// for its first consumer), as KubeVirt's controller does: a pod made earlier would boot from a
// disk CDI is still writing. A VM's instance is made only then anyway (the VM controller
// waits); an instance made by hand waits here, Pending with the reason in its conditions.

// DataVolumesNotReadyReason is the Synchronized condition's reason while an instance waits.
const DataVolumesNotReadyReason = "DataVolumesNotReady"

// EnableDataVolumes makes the controller wait for instances' DataVolumes, whose events bring
// the instances back. Call it only where the cluster serves cdi.kubevirt.io/v1beta1
// datavolumes.
func (c *Controller) EnableDataVolumes(dvInformer informers.GenericInformer) error {
	c.dataVolumes = dvInformer.Lister()
	c.synced = append(c.synced, dvInformer.Informer().HasSynced)
	// A DataVolume's claim has its name: the instances that name the claim name the DataVolume.
	_, err := dvInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueClaimants,
		UpdateFunc: func(_, cur any) { c.enqueueClaimants(cur) },
	})
	return err
}

// dataVolumesWaiting says why the instance's DataVolumes do not let it have a pod yet ("": they
// do, or the cluster does not serve CDI and the volumes are the claims of their names).
func (c *Controller) dataVolumesWaiting(vmi *v1.VirtualMachineInstance) (string, error) {
	if c.dataVolumes == nil {
		return "", nil
	}
	for _, vol := range vmi.Spec.Volumes {
		if vol.DataVolume == nil {
			continue
		}
		dv, err := datavolume.Get(c.dataVolumes, vmi.Namespace, vol.DataVolume.Name)
		switch {
		case err != nil:
			return "", err
		case dv == nil:
			return fmt.Sprintf("DataVolume %s/%s does not exist, waiting for it to appear", vmi.Namespace, vol.DataVolume.Name), nil
		case !datavolume.Usable(dv):
			phase := string(dv.Status.Phase)
			if phase == "" {
				phase = "none yet"
			}
			return fmt.Sprintf("DataVolume %s/%s is not ready (phase %s), waiting for it", vmi.Namespace, vol.DataVolume.Name, phase), nil
		}
	}
	return "", nil
}
