// virt-launcher runs one VirtualMachineInstance's guest inside its launcher pod: a private
// libvirtd, the domain, and the command socket virt-handler drives it through. It exits when
// the guest is gone; SIGTERM shuts the guest down within its grace period first. In
// virt-handler's init container it probes QEMU's capabilities for the node's launchers
// instead (--write-qemu-capabilities).
package main

import (
	"os"

	"github.com/hangarvm/hangar/cmd/virt-launcher/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:]))
}
