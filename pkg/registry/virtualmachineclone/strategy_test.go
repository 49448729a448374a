package virtualmachineclone

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/clone"
)

func vmClone(target *corev1.TypedLocalObjectReference, status clone.VirtualMachineCloneStatus) *clone.VirtualMachineClone {
	return &clone.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", ResourceVersion: "1"},
		Spec: clone.VirtualMachineCloneSpec{
			Source: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"},
			Target: target},
		Status: status}
}

func TestTableColumns(t *testing.T) {
	vm := &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db-2"}
	tests := []struct {
		name          string
		clone         *clone.VirtualMachineClone
		phase, target string
	}{
		{"new, no target", vmClone(nil, clone.VirtualMachineCloneStatus{}), "", ""},
		{"a named target", vmClone(vm, clone.VirtualMachineCloneStatus{Phase: clone.SnapshotInProgress}), "SnapshotInProgress", "db-2"},
		{"a picked target", vmClone(nil, clone.VirtualMachineCloneStatus{Phase: clone.Succeeded, TargetName: ptr.To("clone-x")}), "Succeeded", "clone-x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := tableConvertor.ConvertToTable(context.Background(), tt.clone, nil)
			require.NoError(t, err)
			require.Len(t, table.Rows, 1)
			cells := table.Rows[0].Cells
			require.Len(t, cells, len(table.ColumnDefinitions))
			assert.Equal(t, []interface{}{"c", tt.phase, "db", tt.target}, cells[:4])
		})
	}
}

func TestStatusAndSpecAreWrittenApart(t *testing.T) {
	strategy := NewStrategy(runtime.NewScheme())
	ctx := context.Background()

	created := vmClone(nil, clone.VirtualMachineCloneStatus{Phase: clone.Succeeded})
	strategy.PrepareForCreate(ctx, created)
	assert.Empty(t, created.Status.Phase, "a client does not set the status at creation")

	old := vmClone(nil, clone.VirtualMachineCloneStatus{Phase: clone.SnapshotInProgress})
	update := vmClone(nil, clone.VirtualMachineCloneStatus{Phase: clone.Succeeded})
	strategy.PrepareForUpdate(ctx, update, old)
	assert.Equal(t, clone.SnapshotInProgress, update.Status.Phase, "the main resource keeps the status")

	statusUpdate := vmClone(nil, clone.VirtualMachineCloneStatus{Phase: clone.Succeeded})
	statusUpdate.Spec.Source.Name = "other"
	status := statusStrategy{strategy}
	status.PrepareForUpdate(ctx, statusUpdate, old)
	assert.Equal(t, "db", statusUpdate.Spec.Source.Name, "the status subresource keeps the spec")
	assert.Equal(t, clone.Succeeded, statusUpdate.Status.Phase)
	assert.Empty(t, status.ValidateUpdate(ctx, statusUpdate, old))
}

// TestTargetDefaulted: a clone without a target, or with a target without a name, gets
// KubeVirt's generated name at creation.
func TestTargetDefaulted(t *testing.T) {
	named := &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db-2"}
	tests := []struct {
		name   string
		target *corev1.TypedLocalObjectReference
		want   corev1.TypedLocalObjectReference
	}{
		{"none", nil, corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "clone-db-abcde"}},
		{"no name", &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine"},
			corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "clone-db-abcde"}},
		{"named", named, *named},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := vmClone(tt.target.DeepCopy(), clone.VirtualMachineCloneStatus{})
			defaultTarget(c, "abcde")
			require.NotNil(t, c.Spec.Target)
			assert.Equal(t, tt.want, *c.Spec.Target)
		})
	}
	c := vmClone(nil, clone.VirtualMachineCloneStatus{})
	NewStrategy(runtime.NewScheme()).PrepareForCreate(context.Background(), c)
	assert.Regexp(t, `^clone-db-[a-z0-9]{5}$`, c.Spec.Target.Name)
}

// TestNeeds: a clone of a VM needs the rights of a snapshot and of a restore to a new VM; a
// clone of a snapshot those of the restore only.
func TestNeeds(t *testing.T) {
	rightsOf := func(c *clone.VirtualMachineClone, makesDataVolumes bool) []string {
		var out []string
		for _, n := range Needs(c, "default", makesDataVolumes) {
			out = append(out, n.Verb+" "+n.Resource+"."+n.Group)
		}
		return out
	}
	rights := func(c *clone.VirtualMachineClone) []string { return rightsOf(c, false) }
	assert.Equal(t, []string{"create virtualmachines.kubevirt.io", "get virtualmachines.kubevirt.io",
		"create virtualmachinesnapshots.snapshot.kubevirt.io", "create volumesnapshots.snapshot.storage.k8s.io",
		"create persistentvolumeclaims."}, rights(vmClone(nil, clone.VirtualMachineCloneStatus{})))
	fromSnapshot := vmClone(nil, clone.VirtualMachineCloneStatus{})
	fromSnapshot.Spec.Source = &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: "s"}
	assert.Equal(t, []string{"create virtualmachines.kubevirt.io", "get virtualmachinesnapshots.snapshot.kubevirt.io",
		"create persistentvolumeclaims."}, rights(fromSnapshot))
	assert.Equal(t, []string{"create virtualmachines.kubevirt.io", "get virtualmachinesnapshots.snapshot.kubevirt.io",
		"create persistentvolumeclaims.", "create datavolumes.cdi.kubevirt.io"}, rightsOf(fromSnapshot, true),
		"a source with DataVolume templates: the new VM makes DataVolumes")
}
