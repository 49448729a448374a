// Package app is virt-controller's command line: its flags (Options), their completion and
// validation, and running the controllers from them.
package app

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/hangarvm/hangar/pkg/controller/manager"
	"github.com/hangarvm/hangar/pkg/controller/migrationsigner"
	"github.com/hangarvm/hangar/pkg/leaderelect"
	"github.com/hangarvm/hangar/pkg/metricsserver"
	"github.com/hangarvm/hangar/pkg/migration/identity"
)

// Options are virt-controller's flags.
type Options struct {
	// Controllers configure the controllers (pkg/controller/manager); Complete loads their
	// MigrationCA.
	Controllers manager.Options
	// Kubeconfig is the cluster's; in-cluster configuration when empty. KubevirtKubeconfig
	// reaches the kubevirt.io API when it is not served through the cluster.
	Kubeconfig, KubevirtKubeconfig string
	// QPS and Burst limit the clients' requests.
	QPS   float32
	Burst int
	// LeaderElect runs the controllers only while this replica holds LeaderElection's Lease.
	LeaderElect    bool
	LeaderElection leaderelect.Config
	// HealthzAddress serves /healthz over plain HTTP; empty or "0": not served.
	HealthzAddress string
	Metrics        metricsserver.Options
	// MigrationCACert and MigrationCAKey are the CA that issues the nodes' migration
	// identities; none are issued when both are empty.
	MigrationCACert, MigrationCAKey string
}

// NewOptions returns virt-controller's options with their defaults.
func NewOptions() *Options {
	return &Options{
		Controllers:    manager.DefaultOptions(),
		QPS:            200,
		Burst:          400,
		LeaderElect:    true,
		LeaderElection: leaderelect.Defaults("", "virt-controller", ""),
		HealthzAddress: ":8080",
		Metrics:        metricsserver.Options{Address: ":8443"},
	}
}

// AddFlags adds the flags to a flag set.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	c, le, m := &o.Controllers, &o.LeaderElection, &o.Metrics
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cluster; in-cluster configuration when empty")
	fs.StringVar(&o.KubevirtKubeconfig, "kubevirt-kubeconfig", o.KubevirtKubeconfig, "kubeconfig for the kubevirt.io API when it is not served through the cluster (virt-api standalone, for development); --kubeconfig when empty")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader among replicas through a Lease before running the controllers")
	fs.StringVar(&le.Namespace, "leader-elect-namespace", le.Namespace, "namespace of the leader election Lease (default: --config-namespace)")
	fs.StringVar(&le.Name, "leader-elect-name", le.Name, "name of the leader election Lease")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "how long followers wait after the leader's last renewal before taking over")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "how long the leader tries to renew before it gives up and exits; less than the lease duration")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "how often replicas try to acquire or renew the Lease")
	fs.StringVar(&o.HealthzAddress, "healthz-bind-address", o.HealthzAddress, "plain HTTP address serving /healthz (the kubelet's probes); empty or 0 to disable")
	fs.StringVar(&m.Address, "metrics-bind-address", m.Address, "HTTPS address serving /metrics to callers kube-apiserver allows to get /metrics (TokenReview, SubjectAccessReview); empty or 0 to disable")
	fs.StringVar(&m.CertFile, "metrics-tls-cert-file", m.CertFile, "serving certificate of /metrics; self-signed when empty")
	fs.StringVar(&m.KeyFile, "metrics-tls-private-key-file", m.KeyFile, "serving key of /metrics")
	fs.BoolVar(&m.Insecure, "metrics-insecure-loopback", m.Insecure, "serve /metrics over plain HTTP without authentication (tests, development; a loopback --metrics-bind-address only)")
	fs.StringVar(&c.ConfigNamespace, "config-namespace", c.ConfigNamespace, "namespace of the cluster configuration ConfigMap")
	fs.StringVar(&c.ConfigName, "config-name", c.ConfigName, "name of the cluster configuration ConfigMap (keys: useEmulation, launcherImage, memoryOverhead, cpuAllocationRatio, vmStateStorageClass, featureGates, ...)")
	fs.StringVar(&c.Defaults.LauncherImage, "launcher-image", c.Defaults.LauncherImage, "virt-launcher image, unless the ConfigMap's launcherImage says otherwise")
	fs.IntVar(&c.VMWorkers, "vm-workers", c.VMWorkers, "VirtualMachine workers")
	fs.IntVar(&c.VMIWorkers, "vmi-workers", c.VMIWorkers, "VirtualMachineInstance workers")
	fs.IntVar(&c.ReplicaSetWorkers, "replicaset-workers", c.ReplicaSetWorkers, "VirtualMachineInstanceReplicaSet workers")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "client-side requests per second towards the API servers")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "client-side request burst towards the API servers")
	fs.StringVar(&o.MigrationCACert, "migration-ca-cert", o.MigrationCACert, "certificate of the CA that issues the nodes' migration identities (signer "+identity.SignerName+"); none issued when empty")
	fs.StringVar(&o.MigrationCAKey, "migration-ca-key", o.MigrationCAKey, "key of that CA")
	fs.StringVar(&c.Migration.HandlerNamespace, "handler-namespace", c.Migration.HandlerNamespace, "namespace of the virt-handler pods (their migration proxies)")
	fs.IntVar(&c.Migration.HandlerPort, "handler-migration-port", c.Migration.HandlerPort, "port of virt-handler's migration proxy")
	fs.StringSliceVar(&c.HandlerUsers, "handler-users", c.HandlerUsers, "virt-handler's ServiceAccount user names, whose migration identity requests are answered")
}

// Complete fills in what follows from the flags: the migration CA, read from its files, and
// the Lease's namespace.
func (o *Options) Complete() error {
	if o.MigrationCACert != "" || o.MigrationCAKey != "" {
		ca, err := migrationsigner.LoadCA(o.MigrationCACert, o.MigrationCAKey)
		if err != nil {
			return fmt.Errorf("migration CA: %w", err)
		}
		o.Controllers.MigrationCA = ca
	}
	if o.LeaderElection.Namespace == "" {
		o.LeaderElection.Namespace = o.Controllers.ConfigNamespace
	}
	return nil
}

// Validate checks the flags. None is wrong on its own yet: the leader election's timing is
// checked when the election starts, the addresses when their servers listen.
func (o *Options) Validate() error {
	return nil
}
