package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

func TestValidateVirtualMachineLocks(t *testing.T) {
	halted := func() *kubevirt.VirtualMachine {
		spec := validSpec()
		return &kubevirt.VirtualMachine{Spec: kubevirt.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirt.RunStrategyHalted),
			Template:    &kubevirt.VirtualMachineInstanceTemplateSpec{Spec: spec},
		}}
	}
	restoring := func() *kubevirt.VirtualMachine {
		vm := halted()
		vm.Status.RestoreInProgress = ptr.To("r1")
		return vm
	}
	snapshotting := func() *kubevirt.VirtualMachine {
		vm := halted()
		vm.Status.SnapshotInProgress = ptr.To("s1")
		return vm
	}
	tests := []struct {
		name   string
		old    *kubevirt.VirtualMachine
		change func(*kubevirt.VirtualMachine)
		want   []string // field: message, in order
	}{
		{"no lock: anything goes", halted(), func(vm *kubevirt.VirtualMachine) {
			vm.Spec.RunStrategy = ptr.To(kubevirt.RunStrategyAlways)
			vm.Spec.Template.Spec.Volumes = nil
		}, nil},
		{"restore: start refused", restoring(), func(vm *kubevirt.VirtualMachine) {
			vm.Spec.RunStrategy = ptr.To(kubevirt.RunStrategyAlways)
		}, []string{`spec: Forbidden: Cannot start VM until restore "r1" completes`}},
		{"restore: a stopped VM's spec may change", restoring(), func(vm *kubevirt.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU.Cores = 2
		}, nil},
		{"restore: metadata only, while running", func() *kubevirt.VirtualMachine {
			vm := restoring()
			vm.Spec.RunStrategy = ptr.To(kubevirt.RunStrategyAlways)
			return vm
		}(), func(vm *kubevirt.VirtualMachine) { vm.Labels = map[string]string{"a": "b"} }, nil},
		{"snapshot: volumes refused", snapshotting(), func(vm *kubevirt.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes = vm.Spec.Template.Spec.Volumes[:1]
		}, []string{`spec.template.spec.volumes: Forbidden: Cannot update vm disks or volumes until snapshot "s1" completes`}},
		{"snapshot: running state refused", snapshotting(), func(vm *kubevirt.VirtualMachine) {
			vm.Spec.RunStrategy = ptr.To(kubevirt.RunStrategyAlways)
		}, []string{`spec: Forbidden: Cannot update vm running state until snapshot "s1" completes`}},
		{"snapshot: running instead of runStrategy is a change", snapshotting(), func(vm *kubevirt.VirtualMachine) {
			vm.Spec.RunStrategy, vm.Spec.Running = nil, ptr.To(false)
		}, []string{`spec: Forbidden: Cannot update vm running state until snapshot "s1" completes`}},
		{"snapshot: other spec may change", snapshotting(), func(vm *kubevirt.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU.Cores = 2
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := tt.old.DeepCopy()
			tt.change(vm)
			var got []string
			for _, e := range ValidateVirtualMachineLocks(vm, tt.old) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
