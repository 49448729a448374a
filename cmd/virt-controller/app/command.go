package app

import (
	"context"
	"flag"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// Main runs virt-controller with the command line args and returns its exit status. A bad
// flag prints the usage and exits 2 (pflag's ExitOnError); a failure of Complete, Validate
// or Run is logged and gives 1.
func Main(args []string) int {
	o := NewOptions()
	fs := pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)
	o.AddFlags(fs)
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	_ = fs.Parse(args) // ExitOnError: a parse error has exited

	if err := run(o); err != nil {
		klog.ErrorS(err, "virt-controller failed")
		return 1
	}
	return 0
}

func run(o *Options) error {
	if err := o.Complete(); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(context.Background())
}
