package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func validMigration() *kubevirt.VirtualMachineInstanceMigration {
	return &kubevirt.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-migrate-vm-abcde", Namespace: "ns", ResourceVersion: "1",
			Labels: map[string]string{v1.MigrationSelectorLabel: "vm1"}},
		Spec: kubevirt.VirtualMachineInstanceMigrationSpec{VMIName: "vm1", AddedNodeSelector: map[string]string{"zone": "b"}},
	}
}

func TestValidateVirtualMachineInstanceMigration(t *testing.T) {
	tests := []struct {
		name   string
		modify func(m *kubevirt.VirtualMachineInstanceMigration)
		want   []wantErr
	}{
		{"valid", func(*kubevirt.VirtualMachineInstanceMigration) {}, nil},
		{"no vmiName", func(m *kubevirt.VirtualMachineInstanceMigration) { m.Spec.VMIName = "" },
			[]wantErr{{field.ErrorTypeRequired, "spec.vmiName"}}},
		{"vmiName not a name", func(m *kubevirt.VirtualMachineInstanceMigration) { m.Spec.VMIName = "../etc" },
			[]wantErr{{field.ErrorTypeInvalid, "spec.vmiName"}}},
		{"bad selector key", func(m *kubevirt.VirtualMachineInstanceMigration) {
			m.Spec.AddedNodeSelector = map[string]string{"bad key!": "x"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.addedNodeSelector"}}},
		{"bad selector value", func(m *kubevirt.VirtualMachineInstanceMigration) {
			m.Spec.AddedNodeSelector = map[string]string{"zone": "not valid/"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.addedNodeSelector"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMigration()
			tt.modify(m)
			assert.Equal(t, tt.want, errsOf(ValidateVirtualMachineInstanceMigration(m)))
		})
	}
}

func TestValidateVirtualMachineInstanceMigrationUpdate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(m *kubevirt.VirtualMachineInstanceMigration)
		want   []wantErr
	}{
		{"unchanged", func(*kubevirt.VirtualMachineInstanceMigration) {}, nil},
		{"other label", func(m *kubevirt.VirtualMachineInstanceMigration) { m.Labels["team"] = "a" }, nil},
		{"spec vmiName", func(m *kubevirt.VirtualMachineInstanceMigration) { m.Spec.VMIName = "vm2" },
			[]wantErr{{field.ErrorTypeForbidden, "spec"}}},
		{"spec selector", func(m *kubevirt.VirtualMachineInstanceMigration) { m.Spec.AddedNodeSelector = nil },
			[]wantErr{{field.ErrorTypeForbidden, "spec"}}},
		{"selector label removed in flight", func(m *kubevirt.VirtualMachineInstanceMigration) {
			delete(m.Labels, v1.MigrationSelectorLabel)
		}, []wantErr{{field.ErrorTypeForbidden, "metadata.labels[kubevirt.io/vmi-name]"}}},
		{"selector label changed in flight", func(m *kubevirt.VirtualMachineInstanceMigration) {
			m.Labels[v1.MigrationSelectorLabel] = "vm2"
		}, []wantErr{{field.ErrorTypeForbidden, "metadata.labels[kubevirt.io/vmi-name]"}}},
		{"selector label removed once final", func(m *kubevirt.VirtualMachineInstanceMigration) {
			m.Status.Phase = kubevirt.MigrationSucceeded
			delete(m.Labels, v1.MigrationSelectorLabel)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validMigration()
			m := old.DeepCopy()
			tt.modify(m)
			assert.Equal(t, tt.want, errsOf(ValidateVirtualMachineInstanceMigrationUpdate(m, old)))
		})
	}
}

func TestValidateVirtualMachineInstanceMigrationStatusUpdate(t *testing.T) {
	tests := []struct {
		name     string
		oldPhase kubevirt.VirtualMachineInstanceMigrationPhase
		modify   func(m *kubevirt.VirtualMachineInstanceMigration)
		want     []wantErr
	}{
		{"to scheduling", "", func(m *kubevirt.VirtualMachineInstanceMigration) { m.Status.Phase = kubevirt.MigrationScheduling }, nil},
		{"unknown phase", "", func(m *kubevirt.VirtualMachineInstanceMigration) { m.Status.Phase = "Flying" },
			[]wantErr{{field.ErrorTypeNotSupported, "status.phase"}}},
		{"leave final", kubevirt.MigrationFailed, func(m *kubevirt.VirtualMachineInstanceMigration) { m.Status.Phase = kubevirt.MigrationRunning },
			[]wantErr{{field.ErrorTypeForbidden, "status.phase"}}},
		{"bad condition", "", func(m *kubevirt.VirtualMachineInstanceMigration) {
			m.Status.Conditions = []kubevirt.VirtualMachineInstanceMigrationCondition{{Type: kubevirt.MigrationAbortRequested, Status: "Maybe"}}
		}, []wantErr{{field.ErrorTypeNotSupported, "status.conditions[0].status"}}},
		{"bad mode", "", func(m *kubevirt.VirtualMachineInstanceMigration) {
			m.Status.MigrationState = &kubevirt.VirtualMachineInstanceMigrationState{Mode: "Teleport"}
		}, []wantErr{{field.ErrorTypeNotSupported, "status.migrationState.mode"}}},
		{"completed and failed", "", func(m *kubevirt.VirtualMachineInstanceMigration) {
			m.Status.MigrationState = &kubevirt.VirtualMachineInstanceMigrationState{Completed: true, Failed: true}
		}, []wantErr{{field.ErrorTypeInvalid, "status.migrationState.failed"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validMigration()
			old.Status.Phase = tt.oldPhase
			m := old.DeepCopy()
			tt.modify(m)
			assert.Equal(t, tt.want, errsOf(ValidateVirtualMachineInstanceMigrationStatusUpdate(m, old)))
		})
	}
}

func TestValidateVirtualMachineInstanceStatusUpdateMigrationFields(t *testing.T) {
	tests := []struct {
		name   string
		status kubevirt.VirtualMachineInstanceStatus
		want   []wantErr
	}{
		{"none", kubevirt.VirtualMachineInstanceStatus{}, nil},
		{"valid", kubevirt.VirtualMachineInstanceStatus{MigrationMethod: kubevirt.BlockMigration, EvacuationNodeName: "node-1",
			MigrationState: &kubevirt.VirtualMachineInstanceMigrationState{Mode: kubevirt.MigrationPreCopy, AbortStatus: kubevirt.MigrationAbortInProgress}}, nil},
		{"bad method", kubevirt.VirtualMachineInstanceStatus{MigrationMethod: "Teleport"},
			[]wantErr{{field.ErrorTypeNotSupported, "status.migrationMethod"}}},
		{"bad node", kubevirt.VirtualMachineInstanceStatus{EvacuationNodeName: "Node_1"},
			[]wantErr{{field.ErrorTypeInvalid, "status.evacuationNodeName"}}},
		{"bad abort status", kubevirt.VirtualMachineInstanceStatus{MigrationState: &kubevirt.VirtualMachineInstanceMigrationState{AbortStatus: "Maybe"}},
			[]wantErr{{field.ErrorTypeNotSupported, "status.migrationState.abortStatus"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := &kubevirt.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns", ResourceVersion: "1"},
				Status: kubevirt.VirtualMachineInstanceStatus{Phase: kubevirt.Running}}
			vmi := old.DeepCopy()
			vmi.Status = tt.status
			vmi.Status.Phase = kubevirt.Running
			assert.Equal(t, tt.want, errsOf(ValidateVirtualMachineInstanceStatusUpdate(vmi, old)))
		})
	}
}
