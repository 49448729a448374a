package virtualmachineinstance

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns: NAME AGE PHASE IP NODENAME READY.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		printers.AgeColumn,
		{Name: "Phase", Type: "string", Description: "Lifecycle phase of the instance."},
		{Name: "IP", Type: "string", Description: "Address of the instance's first interface."},
		{Name: "NodeName", Type: "string", Description: "Node the instance runs on."},
		{Name: "Ready", Type: "string", Description: "Whether the instance is ready."},
		{Name: "Paused", Type: "string", Priority: 1, Description: "Whether the instance is paused."},
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		vmi := obj.(*kubevirt.VirtualMachineInstance)
		ip := ""
		if len(vmi.Status.Interfaces) > 0 {
			ip = vmi.Status.Interfaces[0].IP
		}
		return []interface{}{vmi.Name, printers.Age(vmi.CreationTimestamp), string(vmi.Status.Phase), ip,
			vmi.Status.NodeName, conditionStatus(vmi, kubevirt.VirtualMachineInstanceReady),
			conditionStatus(vmi, kubevirt.VirtualMachineInstancePaused)}, nil
	},
}

func conditionStatus(vmi *kubevirt.VirtualMachineInstance, t kubevirt.VirtualMachineInstanceConditionType) string {
	for _, c := range vmi.Status.Conditions {
		if c.Type == t {
			return string(c.Status)
		}
	}
	return ""
}
