// Command virt-handler is Hangar's node agent (a DaemonSet): it drives the launchers of the
// instances scheduled to its node, reports their status, serves their consoles and VNC to
// virt-api, and offers /dev/kvm and /dev/net/tun to launcher pods through kubelet's
// device-plugin API. It can restart at any time: running guests are picked up untouched.
package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/handler"
	"github.com/hangarvm/hangar/pkg/handler/deviceplugin"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/handler/vmimetrics"
	"github.com/hangarvm/hangar/pkg/metricsserver"
)

func main() {
	if err := run(); err != nil {
		klog.ErrorS(err, "virt-handler failed")
		klog.Flush()
		os.Exit(1)
	}
}

func run() error {
	cfg := handler.Config{SetupNetwork: true, Resync: 5 * time.Minute}
	var (
		podsDir                        = "/var/lib/kubelet/pods"
		kubeconfig, kubevirtKubeconfig string
		listen                         = ":18186"
		certFile, keyFile, clientCA    string
		allowedNames                   = []string{"virt-api"}
		devicePlugins                  = true
		pluginDir                      = pluginapi.DevicePluginPath
		workers                        = 4
		metricsOpts                    = metricsserver.Options{Address: ":8443"}
	)
	fs := pflag.CommandLine
	fs.StringVar(&cfg.NodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name ($NODE_NAME; from the downward API in the DaemonSet)")
	fs.StringVar(&podsDir, "kubelet-pods-dir", podsDir, "the kubelet's pods directory (<kubelet root dir>/pods, mounted from the host); launcher pods' socket volumes are below it")
	fs.BoolVar(&cfg.SetupNetwork, "setup-network", cfg.SetupNetwork, "set up each launcher pod's network (bridge, tap, NAT) in its namespace before the guest starts")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (for the kubevirt.io API it serves); in-cluster configuration when empty")
	fs.StringVar(&kubevirtKubeconfig, "kubevirt-kubeconfig", "", "kubeconfig for the kubevirt.io API when it is not served through the cluster; overrides --kubeconfig")
	fs.StringVar(&listen, "listen-address", listen, "HTTPS address serving virt-api (consoles, VNC, guest commands); empty to disable")
	fs.StringVar(&certFile, "tls-cert-file", "", "serving certificate")
	fs.StringVar(&keyFile, "tls-private-key-file", "", "serving key")
	fs.StringVar(&clientCA, "client-ca-file", "", "CA of virt-api's client certificate")
	fs.StringSliceVar(&allowedNames, "allowed-names", allowedNames, "client certificate common names allowed in")
	fs.BoolVar(&devicePlugins, "device-plugins", devicePlugins, "offer devices.kubevirt.io/kvm and devices.kubevirt.io/tun to kubelet")
	fs.StringVar(&pluginDir, "device-plugin-dir", pluginDir, "kubelet's device-plugin directory (fixed in kubelet)")
	fs.IntVar(&workers, "workers", workers, "instance workers")
	fs.StringVar(&metricsOpts.Address, "metrics-bind-address", metricsOpts.Address, "HTTPS address serving /metrics (KubeVirt's per-VMI metrics) to callers kube-apiserver allows to get /metrics; empty or 0 to disable")
	fs.StringVar(&metricsOpts.CertFile, "metrics-tls-cert-file", "", "serving certificate of /metrics; self-signed when empty")
	fs.StringVar(&metricsOpts.KeyFile, "metrics-tls-private-key-file", "", "serving key of /metrics")
	fs.BoolVar(&metricsOpts.Insecure, "metrics-insecure-loopback", false, "serve /metrics over plain HTTP without authentication (development; a loopback --metrics-bind-address only)")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	pflag.Parse()
	if cfg.NodeName == "" {
		return errors.New("--node-name (or $NODE_NAME) is required")
	}

	// The handler talks to the kubevirt.io API only (no Secrets, no pods): through the
	// cluster with its pod's ServiceAccount token, which names its node to virt-api. To
	// kube-apiserver itself only for TokenReviews and SubjectAccessReviews of /metrics callers.
	kubeCfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	kvCfg := kubeCfg
	if kubevirtKubeconfig != "" {
		if kvCfg, err = restConfig(kubevirtKubeconfig); err != nil {
			return err
		}
	}
	kubevirt, err := versioned.NewForConfig(kvCfg)
	if err != nil {
		return err
	}
	if cfg.Pods, err = podsockets.OpenRoot(podsDir); err != nil {
		return err
	}
	defer cfg.Pods.Close()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	c := handler.NewController(cfg, kubevirt)

	if devicePlugins {
		for _, p := range []*deviceplugin.Plugin{deviceplugin.KVM(pluginDir), deviceplugin.TUN(pluginDir)} {
			go func() {
				if err := p.Run(ctx); err != nil {
					klog.ErrorS(err, "device plugin stopped", "resource", p.Resource)
				}
			}()
		}
	}

	if metricsOpts.Enabled() {
		kube, err := kubernetes.NewForConfig(kubeCfg)
		if err != nil {
			return err
		}
		collector := vmimetrics.New(cfg.NodeName, c.MetricsTargets)
		reg := prometheus.NewRegistry()
		reg.MustRegister(collector, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg.MustRegister(collector.Metrics()...)
		srv, err := metricsserver.New(metricsOpts, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), kube)
		if err != nil {
			return err
		}
		go func() {
			klog.InfoS("serving metrics", "address", srv.Addr().String())
			if err := srv.Run(ctx); err != nil {
				klog.ErrorS(err, "metrics server stopped")
				cancel()
			}
		}()
	}

	if listen != "" {
		tlsCfg, err := handler.TLSConfig(certFile, keyFile, clientCA)
		if err != nil {
			return err
		}
		srv := &http.Server{
			Addr:              listen,
			Handler:           (&handler.Server{Lister: c.Lister(), Sockets: &handler.Sockets{Pods: cfg.Pods, NodeName: cfg.NodeName}, AllowedNames: allowedNames}).Handler(),
			TLSConfig:         tlsCfg,
			ReadHeaderTimeout: 10 * time.Second,
		}
		go func() {
			klog.InfoS("serving virt-api", "address", listen, "allowed", strings.Join(allowedNames, ","))
			if err := srv.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				klog.ErrorS(err, "HTTPS server stopped")
				cancel()
			}
		}()
		defer srv.Close()
	}
	return c.Run(ctx, workers)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}
