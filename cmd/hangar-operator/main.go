// Command hangar-operator installs Hangar in a cluster and keeps it: it reconciles the Hangar
// object (hangarvm.io/v1alpha1) into etcd, virt-api, virt-controller and virt-handler of its
// own version, owns their certificates, upgrades them in order, and removes them when the
// object is deleted. `hangar-operator uninstall` deletes the object and waits (a Helm hook).
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/hangarvm/hangar/cmd/hangar-operator/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}
