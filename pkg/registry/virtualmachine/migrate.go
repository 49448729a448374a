package virtualmachine

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/registry/action"
)

// MigrateGenerateName is the prefix of the migrations the migrate action creates (KubeVirt's).
const MigrateGenerateName = "kubevirt-migrate-vm-"

// Migrate serves virtualmachines/migrate: it creates a VirtualMachineInstanceMigration of the
// VM's running instance, through the migration storage, so the checks of a migration create
// (migratable, none in flight) apply and their 422 reaches the caller. A dry run checks
// everything and stores nothing.
func (a *Actions) Migrate(ctx context.Context, name string, body action.Body) error {
	opts := v1.MigrateOptions{}
	if err := body.Decode(&opts); err != nil {
		return err
	}
	if a.migrations == nil {
		return apierrors.NewServiceUnavailable("migrations are not served")
	}
	if _, err := a.vms.Get(ctx, name, &metav1.GetOptions{}); err != nil {
		return err
	}
	vmi, err := a.instance(ctx, name)
	if err != nil {
		return err
	}
	if vmi == nil || vmi.Status.Phase != kubevirt.Running {
		return conflict(name, "VM is not running")
	}
	migration := &kubevirt.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: MigrateGenerateName, Namespace: vmi.Namespace},
		Spec:       kubevirt.VirtualMachineInstanceMigrationSpec{VMIName: name, AddedNodeSelector: opts.AddedNodeSelector},
	}
	options := &metav1.CreateOptions{}
	if action.IsDryRun(opts.DryRun) {
		options.DryRun = []string{metav1.DryRunAll}
	}
	validate, err := a.admission.Create(ctx, migrationTarget, migration, options)
	if err != nil {
		return err
	}
	_, err = a.migrations.Create(ctx, migration, validate, options)
	return err
}
