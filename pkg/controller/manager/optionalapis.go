package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/controller/vm"
)

// Some controllers need another project's API: the VM controller's DataVolumes need CDI
// (cdi.kubevirt.io), the snapshot, restore and clone controllers need Kubernetes'
// VolumeSnapshots (snapshot.storage.k8s.io, the CRDs of external-snapshotter). Either may be
// installed, or removed, while virt-controller runs. virt-controller starts the controllers
// that the served APIs allow; it asks discovery again every OptionalAPIsInterval, and when the
// answer changes it stops its controllers and starts them again with the new set (informers
// of an API that is not served would only fail to list). Nothing is lost: the controllers keep
// no state but their caches, which they list again.

// optionalAPIs says which of the optional APIs the cluster serves.
type optionalAPIs struct {
	dataVolumes     bool
	volumeSnapshots bool
}

func (a optionalAPIs) String() string {
	return fmt.Sprintf("cdi.kubevirt.io/v1beta1 datavolumes served: %t, snapshot.storage.k8s.io/v1 volumesnapshots served: %t",
		a.dataVolumes, a.volumeSnapshots)
}

// errOptionalAPIsChanged ends a run of the controllers whose optional APIs changed.
var errOptionalAPIsChanged = errors.New("the optional APIs the cluster serves changed")

// volumeSnapshotsGroupVersion is Kubernetes' VolumeSnapshot API.
const volumeSnapshotsGroupVersion = "snapshot.storage.k8s.io/v1"

// probeOptionalAPIs asks discovery which optional APIs are served, only those o can use. An
// error is discovery's failure (not a group that is missing, which is "not served").
func probeOptionalAPIs(d discovery.DiscoveryInterface, o Options) (optionalAPIs, error) {
	var apis optionalAPIs
	var err error
	if o.Dynamic != nil {
		if apis.dataVolumes, err = serves(d, vm.DataVolumesGVR.GroupVersion().String(), vm.DataVolumesGVR.Resource); err != nil {
			return optionalAPIs{}, err
		}
	}
	if o.Snapshots != nil && o.VolumeSnapshots != nil {
		if apis.volumeSnapshots, err = serves(d, volumeSnapshotsGroupVersion, "volumesnapshots"); err != nil {
			return optionalAPIs{}, err
		}
	}
	return apis, nil
}

// serves says whether discovery lists resource in groupVersion.
func serves(d discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	resources, err := d.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", groupVersion, err)
	}
	for _, r := range resources.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}

// watchOptionalAPIs asks discovery every interval until the answer differs from started, then
// calls changed once. A failed discovery is no answer: it is asked again.
func watchOptionalAPIs(ctx context.Context, d discovery.DiscoveryInterface, o Options, started optionalAPIs, interval time.Duration, changed func(optionalAPIs)) {
	_ = wait.PollUntilContextCancel(ctx, interval, false, func(context.Context) (bool, error) {
		now, err := probeOptionalAPIs(d, o)
		if err != nil {
			klog.V(2).InfoS("optional APIs not probed", "err", err)
			return false, nil
		}
		if now == started {
			return false, nil
		}
		changed(now)
		return true, nil
	})
}
