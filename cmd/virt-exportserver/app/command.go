package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/exportserver"
)

// shutdownGrace is how long SIGTERM waits for downloads in flight; the pod's termination
// grace period (30 s by default) ends them anyway.
const shutdownGrace = 25 * time.Second

// Main runs virt-exportserver with the command line args and returns its exit status: 2 for
// a bad command line, 1 when the server fails, 0 after SIGTERM.
func Main(args []string) int {
	o := NewOptions()
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2 // the flag package has printed the error and the usage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "virt-exportserver: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := o.Complete(); err != nil {
		fmt.Fprintln(os.Stderr, "virt-exportserver:", err)
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "virt-exportserver:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := o.Run(ctx)
	if err != nil {
		klog.ErrorS(err, "virt-exportserver")
	}
	klog.Flush()
	if err != nil {
		return 1
	}
	return 0
}

// newFlagSet returns the flags of o and klog's, with errors returned to Main.
func newFlagSet(o *Options) *flag.FlagSet {
	fs := flag.NewFlagSet("virt-exportserver", flag.ContinueOnError)
	o.AddFlags(fs)
	klog.InitFlags(fs)
	return fs
}

// Run serves until ctx ends, then shuts down gracefully.
func (o *Options) Run(ctx context.Context) error {
	h, err := exportserver.New(exportserver.Config{Volumes: o.Volumes, TokenFile: o.TokenFile, Expires: o.Expires})
	if err != nil {
		return err
	}
	tlsConfig, err := exportserver.NewTLSConfig(o.CertFile, o.KeyFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:   h,
		TLSConfig: tlsConfig,
		// No write timeout: a disk's download takes as long as it takes.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          klog.NewStandardLogger("WARNING"), // failed handshakes, among others
	}
	klog.InfoS("Serving the export", "address", ln.Addr().String(), "volumes", o.Volumes.String(), "expires", o.Expires)
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	klog.InfoS("Shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
