// Command virt-controller runs Hangar's cluster-wide controllers: VirtualMachines to instances,
// instances to launcher pods, replica sets to instances. Run two replicas: one leads (a Lease
// in --leader-elect-namespace), the other waits to take over.
package main

import (
	"os"

	"github.com/hangarvm/hangar/cmd/virt-controller/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:]))
}
