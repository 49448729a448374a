package virtualmachine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns: NAME AGE STATUS READY.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		printers.AgeColumn,
		{Name: "Status", Type: "string", Description: "Human-readable status of the VirtualMachine."},
		{Name: "Ready", Type: "string", Description: "Whether the VirtualMachine's instance is ready."},
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		vm := obj.(*kubevirt.VirtualMachine)
		ready := ""
		for _, c := range vm.Status.Conditions {
			if c.Type == kubevirt.VirtualMachineReady {
				ready = string(c.Status)
			}
		}
		return []interface{}{vm.Name, printers.Age(vm.CreationTimestamp), string(vm.Status.PrintableStatus), ready}, nil
	},
}
