package virtualmachinesnapshotcontent

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	"github.com/hangarvm/hangar/pkg/registry/printers"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachinesnapshot"
)

// tableConvertor prints KubeVirt's columns: NAME READYTOUSE CREATIONTIME ERROR.
var tableConvertor = printers.TableConvertor{
	Columns: []metav1.TableColumnDefinition{
		printers.NameColumn,
		{Name: "ReadyToUse", Type: "boolean", Description: "Whether every VolumeSnapshot of the content is ready"},
		{Name: "CreationTime", Type: "string", Description: "When the content's VolumeSnapshots were taken"},
		{Name: "Error", Type: "string", Description: "The last error of the content"},
	},
	Row: func(obj runtime.Object) ([]interface{}, error) {
		c := obj.(*snapshot.VirtualMachineSnapshotContent)
		var ready, creation interface{}
		errMsg := ""
		if st := c.Status; st != nil {
			if st.ReadyToUse != nil {
				ready = *st.ReadyToUse
			}
			if st.CreationTime != nil {
				creation = printers.Age(*st.CreationTime)
			}
			errMsg = virtualmachinesnapshot.ErrorMessage(st.Error)
		}
		return []interface{}{c.Name, ready, creation, errMsg}, nil
	},
}
