// virt-api serves kubevirt.io VirtualMachines, VirtualMachineInstances and
// VirtualMachineInstanceReplicaSets as an aggregated API server of Kubernetes.
package main

import (
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/hangarvm/hangar/pkg/virtapi"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	o := virtapi.NewOptions()
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
	os.Exit(cli.Run(cmd))
}
