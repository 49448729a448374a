package virtualmachineinstancereplicaset

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns: NAME DESIRED CURRENT READY AGE.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		{Name: "Desired", Type: "integer", Description: "Number of instances wanted."},
		{Name: "Current", Type: "integer", Description: "Number of instances owned."},
		{Name: "Ready", Type: "integer", Description: "Number of owned instances that are ready."},
		printers.AgeColumn,
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		rs := obj.(*kubevirt.VirtualMachineInstanceReplicaSet)
		var desired int64
		if rs.Spec.Replicas != nil {
			desired = int64(*rs.Spec.Replicas)
		}
		return []interface{}{rs.Name, desired, int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			printers.Age(rs.CreationTimestamp)}, nil
	},
}
