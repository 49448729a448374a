package localcsi

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// Options are hangar-local-csi's command line.
type Options struct {
	Node, DataDir, Capacity     string
	Endpoint, RegistrationDir   string
	PublishDir, BlockPublishDir string
	capacityBytes               int64
	// registered, when set, hears the kubelet's verdict on the registration.
	registered func(ok bool, err string)
}

// NewOptions has the defaults of a node of the local cluster.
func NewOptions() *Options {
	return &Options{
		Capacity:        "100Gi",
		Endpoint:        "/var/lib/kubelet/plugins/" + DriverName + "/csi.sock",
		RegistrationDir: "/var/lib/kubelet/plugins_registry",
		PublishDir:      "/var/lib/kubelet/pods",
		BlockPublishDir: "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices",
	}
}

func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Node, "node", o.Node, "the node's name: the CSI node ID and topology segment (required)")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "directory keeping the node's volumes and snapshots (required)")
	fs.StringVar(&o.Capacity, "capacity", o.Capacity, "how much the node's volumes may add up to (a Kubernetes quantity)")
	fs.StringVar(&o.Endpoint, "endpoint", o.Endpoint, "the CSI unix socket")
	fs.StringVar(&o.RegistrationDir, "registration-dir", o.RegistrationDir, "the kubelet's plugin registration directory; empty: do not register")
	fs.StringVar(&o.PublishDir, "publish-dir", o.PublishDir, "NodePublishVolume targets of file systems must be below this directory")
	fs.StringVar(&o.BlockPublishDir, "block-publish-dir", o.BlockPublishDir, "NodePublishVolume targets of block devices must be below this directory")
}

// Complete parses the capacity.
func (o *Options) Complete() error {
	q, err := resource.ParseQuantity(o.Capacity)
	if err != nil {
		return fmt.Errorf("-capacity %q: %w", o.Capacity, err)
	}
	o.capacityBytes = q.Value()
	return nil
}

func (o *Options) Validate() error {
	var errs []error
	if err := ValidNode(o.Node); err != nil {
		errs = append(errs, fmt.Errorf("-node: %w", err))
	}
	for flag, p := range map[string]string{"-data-dir": o.DataDir, "-endpoint": o.Endpoint, "-publish-dir": o.PublishDir, "-block-publish-dir": o.BlockPublishDir} {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("%s %q: an absolute path is required", flag, p))
		}
	}
	if o.capacityBytes <= 0 {
		errs = append(errs, fmt.Errorf("-capacity %q: must be positive", o.Capacity))
	}
	return errors.Join(errs...)
}

// Run serves CSI on the endpoint and, unless turned off, the kubelet's plugin registration,
// until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	d, err := New(Config{Node: o.Node, DataDir: o.DataDir, Capacity: o.capacityBytes, PublishDir: o.PublishDir, BlockPublishDir: o.BlockPublishDir})
	if err != nil {
		return err
	}
	csiListener, err := Listen(o.Endpoint)
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.Endpoint, err)
	}
	csiServer := d.NewServer()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return csiServer.Serve(csiListener) })
	klog.InfoS("serving CSI", "driver", DriverName, "node", o.Node, "endpoint", o.Endpoint, "dataDir", o.DataDir, "capacity", o.Capacity)
	if o.RegistrationDir != "" {
		// The kubelet's plugin watcher finds the socket by its name in this directory.
		socket := filepath.Join(o.RegistrationDir, DriverName+"-reg.sock")
		regListener, err := Listen(socket)
		if err != nil {
			csiServer.Stop()
			return fmt.Errorf("listen %s: %w", socket, err)
		}
		regServer := NewRegistrationServer(o.Endpoint, o.registered)
		g.Go(func() error { return regServer.Serve(regListener) })
		g.Go(func() error { <-ctx.Done(); regServer.Stop(); return nil })
	}
	g.Go(func() error { <-ctx.Done(); csiServer.GracefulStop(); return nil })
	if err := g.Wait(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
