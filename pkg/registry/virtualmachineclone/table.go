package virtualmachineclone

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/clone"
	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns: NAME PHASE SOURCEVIRTUALMACHINE
// TARGETVIRTUALMACHINE AGE.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		{Name: "Phase", Type: "string", Description: "The phase of the clone"},
		{Name: "SourceVirtualMachine", Type: "string", Description: "The name of the clone's source"},
		{Name: "TargetVirtualMachine", Type: "string", Description: "The name of the clone's target"},
		printers.AgeColumn,
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		c := obj.(*clone.VirtualMachineClone)
		return []interface{}{c.Name, string(c.Status.Phase), sourceName(c), TargetName(c), printers.Age(c.CreationTimestamp)}, nil
	},
}

func sourceName(c *clone.VirtualMachineClone) string {
	if c.Spec.Source == nil {
		return ""
	}
	return c.Spec.Source.Name
}

// TargetName is the target the spec names, else the one the controller picked.
func TargetName(c *clone.VirtualMachineClone) string {
	switch {
	case c.Spec.Target != nil && c.Spec.Target.Name != "":
		return c.Spec.Target.Name
	case c.Status.TargetName != nil:
		return *c.Status.TargetName
	}
	return ""
}
