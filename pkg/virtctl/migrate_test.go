package virtctl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
)

func migration(name, vmi string, phase v1.VirtualMachineInstanceMigrationPhase) *v1.VirtualMachineInstanceMigration {
	return &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{v1.MigrationSelectorLabel: vmi}},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: phase},
	}
}

func TestCancelMigration(t *testing.T) {
	tests := []struct {
		name        string
		existing    []runtime.Object
		dry         bool
		wantDeleted string
		wantLeft    []string
		wantErr     string
	}{
		{"the active one goes, history stays", []runtime.Object{
			migration("old", "vm1", v1.MigrationSucceeded), migration("failed", "vm1", v1.MigrationFailed),
			migration("active", "vm1", v1.MigrationRunning), migration("other-vm", "vm2", v1.MigrationRunning),
		}, false, "active", []string{"failed", "old", "other-vm"}, ""},
		{"a pending one counts as active", []runtime.Object{migration("new", "vm1", "")}, false, "new", nil, ""},
		// The fake clientset deletes even in a dry run: what counts is that the delete asks
		// for one (the integration test checks the server's side).
		{"dry run", []runtime.Object{migration("active", "vm1", v1.MigrationScheduling)}, true, "active", nil, ""},
		{"nothing to cancel", []runtime.Object{migration("old", "vm1", v1.MigrationSucceeded), migration("other-vm", "vm2", v1.MigrationRunning)},
			false, "", []string{"old", "other-vm"}, "found no migration to cancel for vm1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := fake.NewSimpleClientset(tt.existing...)
			name, err := cancelMigration(context.Background(), kv, "ns", "vm1", tt.dry)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.wantDeleted, name)
			}
			for _, a := range kv.Actions() {
				if d, ok := a.(k8stesting.DeleteAction); ok {
					assert.Equal(t, dryRun(tt.dry), d.GetDeleteOptions().DryRun)
				}
			}
			left, err := kv.KubevirtV1().VirtualMachineInstanceMigrations("ns").List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			var names []string
			for _, m := range left.Items {
				names = append(names, m.Name)
			}
			assert.ElementsMatch(t, tt.wantLeft, names)
		})
	}
}
