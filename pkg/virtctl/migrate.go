package virtctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
)

// newMigrateCommand is KubeVirt's `virtctl migrate VM`: the migrate action of the VM, which
// creates a migration of its instance.
func newMigrateCommand(c *cliContext) *cobra.Command {
	var dry bool
	var addedNodeSelector map[string]string
	cmd := &cobra.Command{
		Use:               "migrate VM",
		ValidArgsFunction: c.completeNames(vmsResource),
		Short:             "Migrate a virtual machine to another node",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			opts := &v1.MigrateOptions{DryRun: dryRun(dry), AddedNodeSelector: addedNodeSelector}
			if err := acts.put(cmd.Context(), ns, "virtualmachines", args[0], "migrate", opts); err != nil {
				return fmt.Errorf("migrating VM %s: %w", args[0], err)
			}
			fmt.Fprintf(c.streams.Out, "VM %s was scheduled to migrate\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringToStringVar(&addedNodeSelector, "addedNodeSelector", nil,
		"key=value,key2=value2: restrict the target nodes further for this migration; it never overrides the VM's own constraints")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check the request without changing anything")
	return cmd
}

// newMigrateCancelCommand is `virtctl migrate-cancel VM`: it deletes the instance's
// migration in flight, which aborts it; the guest stays where it was.
func newMigrateCancelCommand(c *cliContext) *cobra.Command {
	var dry bool
	cmd := &cobra.Command{
		Use:               "migrate-cancel VM",
		ValidArgsFunction: c.completeNames(vmsResource),
		Short:             "Cancel the migration of a virtual machine",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, _, ns, err := c.clients()
			if err != nil {
				return err
			}
			name, err := cancelMigration(cmd.Context(), kv, ns, args[0], dry)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.streams.Out, "VM %s was scheduled to migrate-cancel (migration %s)\n", args[0], name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&dry, "dry-run", false, "check the request without changing anything")
	return cmd
}

// cancelMigration deletes the instance's migration that has not ended (there is at most one;
// ended ones are kept as history) and returns its name.
func cancelMigration(ctx context.Context, kv versioned.Interface, namespace, vmName string, dry bool) (string, error) {
	selector := labels.SelectorFromSet(labels.Set{v1.MigrationSelectorLabel: vmName}).String()
	migrations, err := kv.KubevirtV1().VirtualMachineInstanceMigrations(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "", fmt.Errorf("listing the migrations of VM %s: %w", vmName, err)
	}
	for _, m := range migrations.Items {
		if m.IsFinal() {
			continue
		}
		if err := kv.KubevirtV1().VirtualMachineInstanceMigrations(namespace).Delete(ctx, m.Name,
			metav1.DeleteOptions{DryRun: dryRun(dry)}); err != nil {
			return "", fmt.Errorf("canceling migration %s of VM %s: %w", m.Name, vmName, err)
		}
		return m.Name, nil
	}
	return "", fmt.Errorf("found no migration to cancel for %s", vmName)
}
