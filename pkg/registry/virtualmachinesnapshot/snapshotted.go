package virtualmachinesnapshot

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apis/snapshot"
)

// Snapshotted reads what a snapshot keeps of its VM, for the checks of restores and clones
// made from it. Each getter reads the request's namespace.
type Snapshotted struct {
	Snapshots, Contents, VMs rest.Getter
}

// Spec is the VM spec the snapshot name keeps, from its content; while it has none yet, the
// spec of the VM it is of, which is what it will keep. nil when neither exists.
func (s Snapshotted) Spec(ctx context.Context, name string) (*kubevirt.VirtualMachineSpec, error) {
	obj, err := s.Snapshots.Get(ctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	snap := obj.(*snapshot.VirtualMachineSnapshot)
	if snap.Status != nil && snap.Status.VirtualMachineSnapshotContentName != nil {
		obj, err := s.Contents.Get(ctx, *snap.Status.VirtualMachineSnapshotContentName, &metav1.GetOptions{})
		if err == nil {
			if vm := obj.(*snapshot.VirtualMachineSnapshotContent).Spec.Source.VirtualMachine; vm != nil {
				return &vm.Spec, nil
			}
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	obj, err = s.VMs.Get(ctx, snap.Spec.Source.Name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &obj.(*kubevirt.VirtualMachine).Spec, nil
}
