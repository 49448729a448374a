// Command virt-exportserver serves a VirtualMachineExport's volumes over HTTPS in KubeVirt's
// URL layout (pkg/exportserver). The export controller runs it, static, from the
// virt-launcher image in a pod that mounts the exported claims read-only.
package main

import (
	"os"

	"github.com/hangarvm/hangar/cmd/virt-exportserver/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:]))
}
