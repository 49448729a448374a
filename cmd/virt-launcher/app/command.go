package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// Main runs virt-launcher with the command line args and returns its exit status: 0 when
// the guest is gone or the probe is done (failed or not) and for --help, 2 for a bad command
// line or a guest without its instance or as root, 1 when the guest's run fails.
func Main(args []string) int {
	if runAsInit() {
		return 0
	}
	o := NewOptions()
	fs := newFlagSet(o)
	if err := fs.Parse(goFlagSpelling(fs, args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return 2
	}

	if err := o.Complete(); err != nil {
		fmt.Fprintln(os.Stderr, "virt-launcher:", err)
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "virt-launcher: "+strings.ReplaceAll(err.Error(), "\n", "\nvirt-launcher: "))
		return 2
	}
	err := o.Run(context.Background())
	if err != nil {
		klog.ErrorS(err, "virt-launcher")
	}
	klog.Flush()
	if err != nil {
		return 1
	}
	return 0
}

// newFlagSet returns the flags of o and klog's, read as Go's flag package read them before
// pflag: up to the first argument that is not a flag, errors returned to Main.
func newFlagSet(o *Options) *pflag.FlagSet {
	fs := pflag.NewFlagSet(os.Args[0], pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
		fs.PrintDefaults()
	}
	fs.SetInterspersed(false)
	o.AddFlags(fs)
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	return fs
}

// goFlagSpelling rewrites a command line spelt for Go's flag package, which read the
// launcher's flags before pflag, into pflag's spelling: Go's flag takes a long flag after one
// dash as well as two (-name x, -state-dir=/x), where pflag would read shorthands. It reads
// as Go's flag reads: up to "--" or the first argument that is not a flag, a flag's value
// being the next argument unless the flag is a bool or has "=".
func goFlagSpelling(fs *pflag.FlagSet, args []string) []string {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if a[1] != '-' && len(name) > 1 {
			out[i] = "-" + a
		}
		if f := fs.Lookup(name); f != nil && !hasValue && f.NoOptDefVal == "" {
			i++
		}
	}
	return out
}
