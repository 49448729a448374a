// Command virt-handler is Hangar's node agent (a DaemonSet): it drives the launchers of the
// instances scheduled to its node, reports their status, serves their consoles and VNC to
// virt-api, and offers /dev/kvm and /dev/net/tun to launcher pods through kubelet's
// device-plugin API. It can restart at any time: running guests are picked up untouched.
package main

import (
	"os"

	"github.com/hangarvm/hangar/cmd/virt-handler/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:]))
}
