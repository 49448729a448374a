// virtctl controls Hangar's (and KubeVirt's) virtual machines: start, stop, restart, pause,
// unpause, soft-reboot, console, vnc, expose, version, and prints manifests (create vm,
// instancetype, preference). Installed as kubectl-virt, it is a kubectl plugin: kubectl virt
// console my-vm.
package main

import (
	"os"

	"github.com/hangarvm/hangar/pkg/virtctl"
)

func main() {
	os.Exit(virtctl.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
