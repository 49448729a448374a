// Package app is hangar-operator's command line: its flags (Options), their completion and
// validation, and running the operator from them.
package app

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/hangarvm/hangar/pkg/leaderelect"
	"github.com/hangarvm/hangar/pkg/operator/render"
	"github.com/hangarvm/hangar/pkg/version"
)

// Environment variables naming the component images of the operator's version; the release
// manifests set them, pinned by digest.
const (
	EnvVirtAPIImage        = "VIRT_API_IMAGE"
	EnvVirtControllerImage = "VIRT_CONTROLLER_IMAGE"
	EnvVirtHandlerImage    = "VIRT_HANDLER_IMAGE"
	EnvVirtLauncherImage   = "VIRT_LAUNCHER_IMAGE"
	EnvEtcdImage           = "HANGAR_ETCD_IMAGE"
)

// Options are hangar-operator's flags.
type Options struct {
	// Kubeconfig is the cluster's; in-cluster configuration when empty.
	Kubeconfig string
	// Images are the component images it installs.
	Images render.Images
	// Version is what it reports installing; its build's version unless set (tests).
	Version string
	// Resync bounds the time between two reconciles.
	Resync time.Duration
	// LeaderElect runs the reconciler only while this replica holds the Lease, so that an
	// operator being replaced and its successor never both write.
	LeaderElect    bool
	LeaderElection leaderelect.Config
}

// NewOptions returns the options with their defaults, the images from the environment.
func NewOptions() *Options {
	return &Options{
		Images: render.Images{
			VirtAPI: os.Getenv(EnvVirtAPIImage), VirtController: os.Getenv(EnvVirtControllerImage),
			VirtHandler: os.Getenv(EnvVirtHandlerImage), VirtLauncher: os.Getenv(EnvVirtLauncherImage), Etcd: os.Getenv(EnvEtcdImage),
		},
		Resync:         10 * time.Minute,
		LeaderElect:    true,
		LeaderElection: leaderelect.Defaults(render.Namespace, "hangar-operator", ""),
	}
}

// AddFlags adds the flags to a flag set.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cluster; in-cluster configuration when empty")
	fs.StringVar(&o.Images.VirtAPI, "virt-api-image", o.Images.VirtAPI, "virt-api image ($"+EnvVirtAPIImage+")")
	fs.StringVar(&o.Images.VirtController, "virt-controller-image", o.Images.VirtController, "virt-controller image ($"+EnvVirtControllerImage+")")
	fs.StringVar(&o.Images.VirtHandler, "virt-handler-image", o.Images.VirtHandler, "virt-handler image ($"+EnvVirtHandlerImage+")")
	fs.StringVar(&o.Images.VirtLauncher, "virt-launcher-image", o.Images.VirtLauncher, "virt-launcher image ($"+EnvVirtLauncherImage+")")
	fs.StringVar(&o.Images.Etcd, "etcd-image", o.Images.Etcd, "Hangar's etcd image ($"+EnvEtcdImage+")")
	fs.StringVar(&o.Version, "version-override", o.Version, "the version to report installing instead of this build's (tests)")
	fs.DurationVar(&o.Resync, "resync", o.Resync, "longest time between two reconciles")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "reconcile only while holding the Lease hangar/hangar-operator")
}

// Complete fills in the version.
func (o *Options) Complete() error {
	if o.Version == "" {
		o.Version = version.Get().GitVersion
	}
	return nil
}

// Validate checks that every image is named.
func (o *Options) Validate() error {
	if err := o.Images.Validate(); err != nil {
		return fmt.Errorf("%w: set the images by flag or environment (the release manifest does)", err)
	}
	return nil
}
