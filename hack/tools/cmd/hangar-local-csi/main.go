// Command hangar-local-csi is the local cluster's CSI driver (package internal/localcsi): one
// process per node, in the node's mount namespace, started by hangar-cluster when the
// cluster's snapshot add-on is on (HANGAR_CLUSTER_SNAPSHOTS=1; see hack/cluster/README.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/hack/tools/internal/localcsi"
)

func main() {
	o := localcsi.NewOptions()
	o.AddFlags(flag.CommandLine)
	klog.InitFlags(nil)
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	for _, step := range []func() error{o.Complete, o.Validate} {
		if err := step(); err != nil {
			fmt.Fprintln(os.Stderr, "hangar-local-csi:", err)
			os.Exit(2)
		}
	}
	if err := o.Run(ctx); err != nil {
		klog.ErrorS(err, "hangar-local-csi")
		os.Exit(1)
	}
}
