package virtualmachineinstancetype

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns, which for instance types are NAME and AGE.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{printers.NameColumn, printers.AgeColumn},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		meta, _, err := parts(obj)
		if err != nil {
			return nil, err
		}
		return []interface{}{meta.Name, printers.Age(meta.CreationTimestamp)}, nil
	},
}
