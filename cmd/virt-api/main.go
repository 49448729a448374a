// virt-api serves kubevirt.io VirtualMachines, VirtualMachineInstances and
// VirtualMachineInstanceReplicaSets as an aggregated API server of Kubernetes.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/hangarvm/hangar/cmd/virt-api/app"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
