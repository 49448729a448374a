package app

import (
	"context"

	"github.com/spf13/cobra"
)

// NewCommand is virt-api's command: its flags, and on execution Complete, Validate and Run
// until ctx ends.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "virt-api",
		Short: "Serve the kubevirt.io API (VirtualMachines and their instances) from etcd",
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(ctx)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
