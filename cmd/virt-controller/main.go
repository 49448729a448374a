// Command virt-controller runs Hangar's cluster-wide controllers: VirtualMachines to instances,
// instances to launcher pods, replica sets to instances. Run two replicas: one leads (a Lease
// in --leader-elect-namespace), the other waits to take over.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hangarvm/hangar/pkg/controller/migrationsigner"
	"github.com/hangarvm/hangar/pkg/migration/identity"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/controller/manager"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/metricsserver"
)

func main() {
	if err := run(); err != nil {
		klog.ErrorS(err, "virt-controller failed")
		os.Exit(1)
	}
}

func run() error {
	o := manager.DefaultOptions()
	var (
		kubeconfig, kubevirtKubeconfig string
		leaderElect                            = true
		le                                     = manager.DefaultLeaderElection("", "virt-controller", "")
		healthzAddr                            = ":8080"
		metricsOpts                            = metricsserver.Options{Address: ":8443"}
		qps                            float32 = 200
		burst                                  = 400
	)
	fs := pflag.CommandLine
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; in-cluster configuration when empty")
	fs.StringVar(&kubevirtKubeconfig, "kubevirt-kubeconfig", "", "kubeconfig for the kubevirt.io API when it is not served through the cluster (virt-api standalone, for development); --kubeconfig when empty")
	fs.BoolVar(&leaderElect, "leader-elect", leaderElect, "elect a leader among replicas through a Lease before running the controllers")
	fs.StringVar(&le.Namespace, "leader-elect-namespace", "", "namespace of the leader election Lease (default: --config-namespace)")
	fs.StringVar(&le.Name, "leader-elect-name", le.Name, "name of the leader election Lease")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "how long followers wait after the leader's last renewal before taking over")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "how long the leader tries to renew before it gives up and exits; less than the lease duration")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "how often replicas try to acquire or renew the Lease")
	fs.StringVar(&healthzAddr, "healthz-bind-address", healthzAddr, "plain HTTP address serving /healthz (the kubelet's probes); empty or 0 to disable")
	fs.StringVar(&metricsOpts.Address, "metrics-bind-address", metricsOpts.Address, "HTTPS address serving /metrics to callers kube-apiserver allows to get /metrics (TokenReview, SubjectAccessReview); empty or 0 to disable")
	fs.StringVar(&metricsOpts.CertFile, "metrics-tls-cert-file", "", "serving certificate of /metrics; self-signed when empty")
	fs.StringVar(&metricsOpts.KeyFile, "metrics-tls-private-key-file", "", "serving key of /metrics")
	fs.BoolVar(&metricsOpts.Insecure, "metrics-insecure-loopback", false, "serve /metrics over plain HTTP without authentication (tests, development; a loopback --metrics-bind-address only)")
	fs.StringVar(&o.ConfigNamespace, "config-namespace", o.ConfigNamespace, "namespace of the cluster configuration ConfigMap")
	fs.StringVar(&o.ConfigName, "config-name", o.ConfigName, "name of the cluster configuration ConfigMap (keys: useEmulation, launcherImage, memoryOverhead, cpuAllocationRatio, vmStateStorageClass, featureGates, ...)")
	fs.StringVar(&o.Defaults.LauncherImage, "launcher-image", o.Defaults.LauncherImage, "virt-launcher image, unless the ConfigMap's launcherImage says otherwise")
	fs.IntVar(&o.VMWorkers, "vm-workers", o.VMWorkers, "VirtualMachine workers")
	fs.IntVar(&o.VMIWorkers, "vmi-workers", o.VMIWorkers, "VirtualMachineInstance workers")
	fs.IntVar(&o.ReplicaSetWorkers, "replicaset-workers", o.ReplicaSetWorkers, "VirtualMachineInstanceReplicaSet workers")
	fs.Float32Var(&qps, "kube-api-qps", qps, "client-side requests per second towards the API servers")
	fs.IntVar(&burst, "kube-api-burst", burst, "client-side request burst towards the API servers")
	var caCert, caKey string
	fs.StringVar(&caCert, "migration-ca-cert", "", "certificate of the CA that issues the nodes' migration identities (signer "+identity.SignerName+"); none issued when empty")
	fs.StringVar(&caKey, "migration-ca-key", "", "key of that CA")
	fs.StringVar(&o.Migration.HandlerNamespace, "handler-namespace", o.Migration.HandlerNamespace, "namespace of the virt-handler pods (their migration proxies)")
	fs.IntVar(&o.Migration.HandlerPort, "handler-migration-port", o.Migration.HandlerPort, "port of virt-handler's migration proxy")
	fs.StringSliceVar(&o.HandlerUsers, "handler-users", o.HandlerUsers, "virt-handler's ServiceAccount user names, whose migration identity requests are answered")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	pflag.Parse()
	if caCert != "" || caKey != "" {
		ca, err := migrationsigner.LoadCA(caCert, caKey)
		if err != nil {
			return fmt.Errorf("migration CA: %w", err)
		}
		o.MigrationCA = ca
	}
	if le.Namespace == "" {
		le.Namespace = o.ConfigNamespace
	}

	kubeCfg, err := restConfig(kubeconfig, qps, burst)
	if err != nil {
		return err
	}
	kvCfg := kubeCfg
	if kubevirtKubeconfig != "" {
		if kvCfg, err = restConfig(kubevirtKubeconfig, qps, burst); err != nil {
			return err
		}
	}
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	kubevirt, err := versioned.NewForConfig(kvCfg)
	if err != nil {
		return err
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	electionHealth := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	if healthzAddr != "" && healthzAddr != "0" {
		mux := http.NewServeMux()
		healthz.InstallHandler(mux, healthz.PingHealthz, electionHealth)
		server := &http.Server{Addr: healthzAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				klog.ErrorS(err, "Healthz server stopped")
				cancel()
			}
		}()
		defer server.Close()
	}
	if metricsOpts.Enabled() {
		// The metrics name every VM in the cluster: only callers allowed to get /metrics see
		// them (kube-apiserver decides, as for the handler's).
		srv, err := metricsserver.New(metricsOpts, legacyregistry.Handler(), kube)
		if err != nil {
			return err
		}
		go func() {
			if err := srv.Run(ctx); err != nil {
				klog.ErrorS(err, "Metrics server stopped")
				cancel()
			}
		}()
	}

	if !leaderElect {
		return manager.Run(ctx, kubevirt, kube, o)
	}
	host, _ := os.Hostname()
	le.Identity = host + "_" + uuid.NewString()
	le.Healthz = electionHealth
	err = manager.RunLeading(ctx, kubevirt, kube, o, le)
	if errors.Is(err, manager.ErrLostLeadership) {
		klog.InfoS("Lost leadership, exiting", "identity", le.Identity)
	}
	return err
}

func restConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = "virt-controller"
	// Protobuf to kube-apiserver and virt-api alike, as kube's own controllers speak: the
	// clientsets prefer it already; this makes it the rule for every client of the config.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg, nil
}
