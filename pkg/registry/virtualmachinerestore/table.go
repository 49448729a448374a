package virtualmachinerestore

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns: NAME TARGETKIND TARGETNAME COMPLETE RESTORETIME
// ERROR. A restore has no error field (KubeVirt's column reads one that does not exist), so
// the last column shows a Failure condition's message.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		{Name: "TargetKind", Type: "string", Description: "The kind of the restore's target"},
		{Name: "TargetName", Type: "string", Description: "The name of the restore's target"},
		{Name: "Complete", Type: "boolean", Description: "Whether the restore is complete"},
		{Name: "RestoreTime", Type: "string", Description: "When the restore completed"},
		{Name: "Error", Type: "string", Description: "Why the restore cannot go on"},
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		r := obj.(*snapshot.VirtualMachineRestore)
		var complete, restoreTime interface{}
		errMsg := ""
		if st := r.Status; st != nil {
			if st.Complete != nil {
				complete = *st.Complete
			}
			if st.RestoreTime != nil {
				restoreTime = printers.Age(*st.RestoreTime)
			}
			for _, c := range st.Conditions {
				if c.Type == snapshot.ConditionFailure && c.Status == "True" {
					errMsg = c.Message
				}
			}
		}
		return []interface{}{r.Name, r.Spec.Target.Kind, r.Spec.Target.Name, complete, restoreTime, errMsg}, nil
	},
}
