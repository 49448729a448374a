package virtualmachineexport

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/export"
	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns: NAME SOURCEKIND SOURCENAME PHASE AGE.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		{Name: "SourceKind", Type: "string", Description: "The kind of the exported source"},
		{Name: "SourceName", Type: "string", Description: "The name of the exported source"},
		{Name: "Phase", Type: "string", Description: "The phase of the export"},
		printers.AgeColumn,
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		e := obj.(*export.VirtualMachineExport)
		return []interface{}{e.Name, e.Spec.Source.Kind, e.Spec.Source.Name, string(e.Status.Phase), printers.Age(e.CreationTimestamp)}, nil
	},
}
