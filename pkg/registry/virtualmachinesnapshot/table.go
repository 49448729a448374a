package virtualmachinesnapshot

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	"github.com/hangarvm/hangar/pkg/registry/printers"
)

// tableConvertor prints KubeVirt's columns: NAME SOURCEKIND SOURCENAME PHASE READYTOUSE
// CREATIONTIME ERROR.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		{Name: "SourceKind", Type: "string", Description: "The kind of the snapshotted object"},
		{Name: "SourceName", Type: "string", Description: "The name of the snapshotted object"},
		{Name: "Phase", Type: "string", Description: "The phase of the snapshot"},
		{Name: "ReadyToUse", Type: "boolean", Description: "Whether the snapshot can be restored"},
		{Name: "CreationTime", Type: "string", Description: "When the snapshot was taken"},
		{Name: "Error", Type: "string", Description: "The last error of the snapshot"},
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		s := obj.(*snapshot.VirtualMachineSnapshot)
		var phase, creation, errMsg interface{} = "", nil, ""
		var ready interface{}
		if st := s.Status; st != nil {
			phase = string(st.Phase)
			if st.ReadyToUse != nil {
				ready = *st.ReadyToUse
			}
			if st.CreationTime != nil {
				creation = printers.Age(*st.CreationTime)
			}
			errMsg = ErrorMessage(st.Error)
		}
		return []interface{}{s.Name, s.Spec.Source.Kind, s.Spec.Source.Name, phase, ready, creation, errMsg}, nil
	},
}

// ErrorMessage is the message of a snapshot's error, "" without one.
func ErrorMessage(e *snapshot.Error) string {
	if e == nil || e.Message == nil {
		return ""
	}
	return *e.Message
}
