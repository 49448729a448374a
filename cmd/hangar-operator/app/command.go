package app

import (
	"time"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// NewCommand is hangar-operator's command, with its uninstall subcommand.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "hangar-operator",
		Short: "Install Hangar from the Hangar object and keep it installed",
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(genericapiserver.SetupSignalContext())
		},
	}
	o.AddFlags(cmd.Flags())

	var kubeconfig string
	timeout := 30 * time.Minute
	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Delete the Hangar object and wait until the operator has removed Hangar (a Helm pre-delete hook)",
		RunE: func(c *cobra.Command, _ []string) error {
			return Uninstall(c.Context(), kubeconfig, timeout)
		},
	}
	uninstall.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; in-cluster configuration when empty")
	uninstall.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the removal")
	cmd.AddCommand(uninstall)
	return cmd
}
