package virtualmachineinstancemigration

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns: NAME PHASE VMI (KubeVirt's CRD lists no AGE).
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		{Name: "Phase", Type: "string", Description: "The current phase of VM instance migration"},
		{Name: "VMI", Type: "string", Description: "The name of the VMI to perform the migration on"},
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		m := obj.(*kubevirt.VirtualMachineInstanceMigration)
		return []interface{}{m.Name, string(m.Status.Phase), m.Spec.VMIName}, nil
	},
}
