// Package app is virt-handler's command line: its flags (Options), their validation, and
// running the node agent from them.
package app

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/pflag"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/hangarvm/hangar/pkg/handler"
	"github.com/hangarvm/hangar/pkg/metricsserver"
	"github.com/hangarvm/hangar/pkg/migration/identity"
)

// Options are virt-handler's flags.
type Options struct {
	// Handler configures the node agent (pkg/handler): its node, the pod network's setup and
	// the resync; Run adds the pods directory, the QEMU capabilities and the migration
	// identity.
	Handler handler.Config
	// PodsDir is the kubelet's pods directory, below which the launcher pods' sockets are.
	PodsDir string
	// Kubeconfig is the cluster's; in-cluster configuration when empty. KubevirtKubeconfig
	// reaches the kubevirt.io API when it is not served through the cluster.
	Kubeconfig, KubevirtKubeconfig string
	// ListenAddress serves virt-api (consoles, VNC, guest commands) over TLS with this node's
	// identity (or, for development, the certificate TLSCertFile and TLSKeyFile), to clients
	// with a certificate of ClientCAFile whose common name is one of AllowedNames; empty: not
	// served.
	ListenAddress                         string
	TLSCertFile, TLSKeyFile, ClientCAFile string
	AllowedNames                          []string
	// DevicePlugins offers /dev/kvm and /dev/net/tun to kubelet through DevicePluginDir.
	DevicePlugins   bool
	DevicePluginDir string
	// Workers sync instances.
	Workers int
	// MigrationListenAddress serves the migration proxy; empty: no live migration. The
	// peers' identities are checked against MigrationCAFile.
	MigrationListenAddress, MigrationCAFile string
	Metrics                                 metricsserver.Options
	// QEMUCapabilitiesFile is the init container's probe of QEMU, handed to the launchers.
	QEMUCapabilitiesFile string
}

// NewOptions returns virt-handler's options with their defaults; the node's name is
// $NODE_NAME.
func NewOptions() *Options {
	return &Options{
		Handler:                handler.Config{NodeName: os.Getenv("NODE_NAME"), SetupNetwork: true, Resync: 5 * time.Minute},
		PodsDir:                "/var/lib/kubelet/pods",
		ListenAddress:          ":18186",
		AllowedNames:           []string{"virt-api"},
		DevicePlugins:          true,
		DevicePluginDir:        pluginapi.DevicePluginPath,
		Workers:                4,
		MigrationListenAddress: ":18187",
		Metrics:                metricsserver.Options{Address: ":8443"},
	}
}

// AddFlags adds the flags to a flag set.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	h, m := &o.Handler, &o.Metrics
	fs.StringVar(&h.NodeName, "node-name", h.NodeName, "this node's name ($NODE_NAME; from the downward API in the DaemonSet)")
	fs.StringVar(&o.PodsDir, "kubelet-pods-dir", o.PodsDir, "the kubelet's pods directory (<kubelet root dir>/pods, mounted from the host); launcher pods' socket volumes are below it")
	fs.BoolVar(&h.SetupNetwork, "setup-network", h.SetupNetwork, "set up each launcher pod's network (bridge, tap, NAT) in its namespace before the guest starts")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cluster (for the kubevirt.io API it serves); in-cluster configuration when empty")
	fs.StringVar(&o.KubevirtKubeconfig, "kubevirt-kubeconfig", o.KubevirtKubeconfig, "kubeconfig for the kubevirt.io API when it is not served through the cluster; overrides --kubeconfig")
	fs.StringVar(&o.ListenAddress, "listen-address", o.ListenAddress, "HTTPS address serving virt-api (consoles, VNC, guest commands); empty to disable")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "serving certificate, for development: without it the handler serves virt-api with this node's identity "+
		"(a certificate from virt-controller's signer "+identity.SignerName+" naming the node), which virt-api requires in a cluster")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "serving key of --tls-cert-file")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA of virt-api's client certificate")
	fs.StringSliceVar(&o.AllowedNames, "allowed-names", o.AllowedNames, "client certificate common names allowed in")
	fs.BoolVar(&o.DevicePlugins, "device-plugins", o.DevicePlugins, "offer devices.kubevirt.io/kvm and devices.kubevirt.io/tun to kubelet")
	fs.StringVar(&o.DevicePluginDir, "device-plugin-dir", o.DevicePluginDir, "kubelet's device-plugin directory (fixed in kubelet)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "instance workers")
	fs.StringVar(&o.MigrationListenAddress, "migration-listen-address", o.MigrationListenAddress, "address of the migration proxy (TLS, this node's migration identity); empty to disable live migration")
	fs.StringVar(&o.MigrationCAFile, "migration-ca-file", o.MigrationCAFile, "CA certificate of the nodes' migration identities (virt-controller's signer "+identity.SignerName+")")
	fs.StringVar(&m.Address, "metrics-bind-address", m.Address, "HTTPS address serving /metrics (KubeVirt's per-VMI metrics) to callers kube-apiserver allows to get /metrics; empty or 0 to disable")
	fs.StringVar(&m.CertFile, "metrics-tls-cert-file", m.CertFile, "serving certificate of /metrics; self-signed when empty")
	fs.StringVar(&m.KeyFile, "metrics-tls-private-key-file", m.KeyFile, "serving key of /metrics")
	fs.BoolVar(&m.Insecure, "metrics-insecure-loopback", m.Insecure, "serve /metrics over plain HTTP without authentication (development; a loopback --metrics-bind-address only)")
	fs.StringVar(&o.QEMUCapabilitiesFile, "qemu-capabilities-file", o.QEMUCapabilitiesFile,
		"libvirt's capabilities file of QEMU, written on this node by the pod's init container (virt-launcher --write-qemu-capabilities) "+
			"from the launchers' root file system; launchers seed libvirt's cache with it instead of probing QEMU. None when empty or missing")
}

// Complete fills in what follows from the flags: nothing yet, the node's name defaults to
// $NODE_NAME in NewOptions.
func (o *Options) Complete() error {
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	var errs []error
	if o.Handler.NodeName == "" {
		errs = append(errs, errors.New("--node-name (or $NODE_NAME) is required"))
	}
	if o.MigrationListenAddress != "" && o.MigrationCAFile == "" {
		errs = append(errs, errors.New("--migration-ca-file is required with --migration-listen-address"))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	if o.ListenAddress != "" && o.ClientCAFile == "" {
		errs = append(errs, errors.New("--client-ca-file is required with --listen-address"))
	}
	return errors.Join(errs...)
}
