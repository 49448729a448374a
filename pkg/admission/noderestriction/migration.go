package noderestriction

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// checkMigrationVerdicts keeps what gates migrations out of a node agent's hands: the
// LiveMigratable condition and status.migrationMethod are virt-controller's verdicts on the
// spec and the claims (an agent that could set them could have a claim only one node may
// mount opened on two), and status.evacuationNodeName is set by virt-api when an eviction is
// refused. An agent may clear the mark (the hand-off of an evacuated instance ends it), never
// set or change it.
func checkMigrationVerdicts(vmi, old *kubevirt.VirtualMachineInstance) error {
	cond := func(v *kubevirt.VirtualMachineInstance) *kubevirt.VirtualMachineInstanceCondition {
		for i := range v.Status.Conditions {
			if v.Status.Conditions[i].Type == kubevirt.VirtualMachineInstanceIsMigratable {
				return &v.Status.Conditions[i]
			}
		}
		return nil
	}
	if !equality.Semantic.DeepEqual(cond(vmi), cond(old)) {
		return fmt.Errorf("the %s condition may not change: it is virt-controller's", kubevirt.VirtualMachineInstanceIsMigratable)
	}
	if vmi.Status.MigrationMethod != old.Status.MigrationMethod {
		return fmt.Errorf("status.migrationMethod may not change: it is virt-controller's")
	}
	if n := vmi.Status.EvacuationNodeName; n != "" && n != old.Status.EvacuationNodeName {
		return fmt.Errorf("status.evacuationNodeName may not be set by a node agent, only cleared")
	}
	return nil
}
