package v1beta1

import (
	"k8s.io/apimachinery/pkg/conversion"

	kubevirtv1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/snapshot"
)

// The VirtualMachine a content keeps converts with kubevirt.io/v1's functions, which
// conversion-gen does not see from this package.

// Convert_v1beta1_VirtualMachine_To_snapshot_VirtualMachine converts a kept VirtualMachine.
func Convert_v1beta1_VirtualMachine_To_snapshot_VirtualMachine(in *VirtualMachine, out *snapshot.VirtualMachine, s conversion.Scope) error {
	out.ObjectMeta = in.ObjectMeta
	if err := kubevirtv1.Convert_v1_VirtualMachineSpec_To_kubevirt_VirtualMachineSpec(&in.Spec, &out.Spec, s); err != nil {
		return err
	}
	return kubevirtv1.Convert_v1_VirtualMachineStatus_To_kubevirt_VirtualMachineStatus(&in.Status, &out.Status, s)
}

// Convert_snapshot_VirtualMachine_To_v1beta1_VirtualMachine converts a kept VirtualMachine.
func Convert_snapshot_VirtualMachine_To_v1beta1_VirtualMachine(in *snapshot.VirtualMachine, out *VirtualMachine, s conversion.Scope) error {
	out.ObjectMeta = in.ObjectMeta
	if err := kubevirtv1.Convert_kubevirt_VirtualMachineSpec_To_v1_VirtualMachineSpec(&in.Spec, &out.Spec, s); err != nil {
		return err
	}
	return kubevirtv1.Convert_kubevirt_VirtualMachineStatus_To_v1_VirtualMachineStatus(&in.Status, &out.Status, s)
}
