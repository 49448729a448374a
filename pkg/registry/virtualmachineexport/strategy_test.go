package virtualmachineexport

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/export"
)

func claimExport(status export.VirtualMachineExportStatus) *export.VirtualMachineExport {
	return &export.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default", ResourceVersion: "1"},
		Spec:   export.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "dump"}},
		Status: status}
}

func TestTableColumns(t *testing.T) {
	table, err := tableConvertor.ConvertToTable(context.Background(), claimExport(export.VirtualMachineExportStatus{Phase: export.Ready}), nil)
	require.NoError(t, err)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []interface{}{"e", "PersistentVolumeClaim", "dump", "Ready"}, table.Rows[0].Cells[:4])
}

func TestStatusAndSpecAreWrittenApart(t *testing.T) {
	strategy := NewStrategy(runtime.NewScheme())
	ctx := context.Background()

	created := claimExport(export.VirtualMachineExportStatus{Phase: export.Ready, ServiceName: "forged"})
	strategy.PrepareForCreate(ctx, created)
	assert.Empty(t, created.Status, "a user cannot create an export with a status")

	old := claimExport(export.VirtualMachineExportStatus{Phase: export.Pending})
	update := claimExport(export.VirtualMachineExportStatus{Phase: export.Ready})
	strategy.PrepareForUpdate(ctx, update, old)
	assert.Equal(t, export.Pending, update.Status.Phase, "the main resource keeps the status")

	status := claimExport(export.VirtualMachineExportStatus{Phase: export.Ready})
	status.Spec.Source.Name = "other"
	statusStrategy{strategy}.PrepareForUpdate(ctx, status, old)
	assert.Equal(t, "dump", status.Spec.Source.Name, "the status subresource keeps the spec")
	assert.Equal(t, export.Ready, status.Status.Phase)
}

func TestNeeds(t *testing.T) {
	e := claimExport(export.VirtualMachineExportStatus{})
	needs := Needs(e, "ns")
	require.Len(t, needs, 1)
	assert.Equal(t, []string{"get", "persistentvolumeclaims", "dump"}, []string{needs[0].Verb, needs[0].Resource, needs[0].Name})

	e.Spec.Source = corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"}
	e.Spec.TokenSecretRef = ptr.To("tok")
	var got [][]string
	for _, n := range Needs(e, "ns") {
		got = append(got, []string{n.Verb, n.Resource, n.Name, n.Namespace})
	}
	assert.Equal(t, [][]string{{"get", "virtualmachines", "db", "ns"}, {"get", "persistentvolumeclaims", "", "ns"}, {"get", "secrets", "tok", "ns"}}, got)
}
