package manager

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/reference"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
)

// TestEventsCanNameEveryKind: the event recorder builds each event's involvedObject from
// client-go's scheme; a kind it does not know loses the event (the recorder only logs).
func TestEventsCanNameEveryKind(t *testing.T) {
	for _, obj := range []runtime.Object{&v1.VirtualMachine{}, &v1.VirtualMachineInstance{}, &snapshotv1beta1.VirtualMachineSnapshot{},
		&snapshotv1beta1.VirtualMachineRestore{}, &clonev1beta1.VirtualMachineClone{}, &exportv1beta1.VirtualMachineExport{}} {
		ref, err := reference.GetReference(scheme.Scheme, obj)
		if assert.NoError(t, err, "%T", obj) {
			assert.NotEmpty(t, ref.Kind)
		}
	}
}
