package app

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/handler"
	"github.com/hangarvm/hangar/pkg/handler/deviceplugin"
	"github.com/hangarvm/hangar/pkg/handler/podfiles"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/handler/vmimetrics"
	"github.com/hangarvm/hangar/pkg/kubeclient"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
	"github.com/hangarvm/hangar/pkg/metricsserver"
)

// Run serves the migration proxy, the device plugins, /metrics and virt-api's requests and
// drives this node's instances until ctx ends or SIGINT or SIGTERM arrives.
func (o *Options) Run(ctx context.Context) error {
	cfg := o.Handler
	// The handler talks to the kubevirt.io API (no Secrets, no pods): through the cluster
	// with its pod's ServiceAccount token, which names its node to virt-api. Of the core
	// API it uses certificates.k8s.io, for its node's migration identity, and TokenReviews
	// and SubjectAccessReviews of /metrics callers. Protobuf, as the kubelet speaks to
	// kube-apiserver: the instances' status updates and the watch of the node's instances
	// are the handler's whole traffic; client-go's default QPS and burst.
	kubeCfg, err := kubeclient.Config(o.Kubeconfig, 0, 0)
	if err != nil {
		return err
	}
	kvCfg := kubeCfg
	if o.KubevirtKubeconfig != "" {
		if kvCfg, err = kubeclient.Config(o.KubevirtKubeconfig, 0, 0); err != nil {
			return err
		}
	}
	kubevirt, err := versioned.NewForConfig(kvCfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	if o.QEMUCapabilitiesFile != "" {
		cfg.QEMUCapabilities = readQEMUCapabilities(o.QEMUCapabilitiesFile)
	}
	if cfg.Pods, err = podsockets.OpenRoot(o.PodsDir); err != nil {
		return err
	}
	defer cfg.Pods.Close()
	// Hotplugged claims' files, opened in their attachment pods for the launchers, which run
	// as KubeVirt's qemu user.
	cfg.Files = &podfiles.Opener{Peers: podsockets.ProcPeers{}, UID: layout.LauncherUID, GID: layout.LauncherUID}

	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	var migrationLn net.Listener
	// The node's identity: what it proves to virt-api and to the other nodes' handlers.
	var nodeIdentity certificate.Manager
	if o.MigrationListenAddress != "" || o.ListenAddress != "" && o.TLSCertFile == "" {
		if nodeIdentity, err = migrationIdentity(kube, cfg.NodeName); err != nil {
			return err
		}
		nodeIdentity.Start()
		defer nodeIdentity.Stop()
	}
	if o.MigrationListenAddress != "" {
		cfg.Migration = &handler.MigrationTLS{Node: cfg.NodeName, Certificate: nodeIdentity.Current, CAFile: o.MigrationCAFile}
		if migrationLn, err = net.Listen("tcp", o.MigrationListenAddress); err != nil {
			return err
		}
	}
	c := handler.NewController(cfg, kubevirt)
	if migrationLn != nil {
		go func() {
			klog.InfoS("serving migrations", "address", o.MigrationListenAddress)
			if err := c.ServeMigrations(ctx, migrationLn); err != nil {
				klog.ErrorS(err, "migration proxy stopped")
				cancel()
			}
		}()
	}

	if o.DevicePlugins {
		for _, p := range []*deviceplugin.Plugin{deviceplugin.KVM(o.DevicePluginDir), deviceplugin.TUN(o.DevicePluginDir)} {
			go func() {
				if err := p.Run(ctx); err != nil {
					klog.ErrorS(err, "device plugin stopped", "resource", p.Resource)
				}
			}()
		}
	}

	if o.Metrics.Enabled() {
		collector := vmimetrics.New(cfg.NodeName, c.MetricsTargets)
		reg := prometheus.NewRegistry()
		reg.MustRegister(collector, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg.MustRegister(collector.Metrics()...)
		srv, err := metricsserver.New(o.Metrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), kube)
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

	if o.ListenAddress != "" {
		var tlsCfg *tls.Config
		if o.TLSCertFile != "" {
			tlsCfg, err = handler.TLSConfig(o.TLSCertFile, o.TLSKeyFile, o.ClientCAFile)
		} else {
			tlsCfg, err = handler.NodeTLSConfig(nodeIdentity.Current, o.ClientCAFile)
		}
		if err != nil {
			return err
		}
		srv := &http.Server{
			Addr:              o.ListenAddress,
			Handler:           (&handler.Server{Lister: c.Lister(), Sockets: &handler.Sockets{Pods: cfg.Pods, NodeName: cfg.NodeName}, AllowedNames: o.AllowedNames, Calls: c.Calls()}).Handler(),
			TLSConfig:         tlsCfg,
			ReadHeaderTimeout: 10 * time.Second,
		}
		go func() {
			klog.InfoS("serving virt-api", "address", o.ListenAddress, "allowed", strings.Join(o.AllowedNames, ","))
			if err := srv.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				klog.ErrorS(err, "HTTPS server stopped")
				cancel()
			}
		}()
		defer srv.Close()
	}
	return c.Run(ctx, o.Workers)
}

// readQEMUCapabilities reads the capabilities file the init container wrote; without one
// (the probe failed) the launchers probe QEMU themselves.
func readQEMUCapabilities(path string) string {
	f, err := os.Open(path)
	if err != nil {
		klog.ErrorS(err, "no QEMU capabilities for the launchers; each probes QEMU itself")
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, libvirtd.MaxCapabilitiesSize+1))
	if err == nil {
		err = libvirtd.CheckCapabilities(data, domain.DefaultEmulator)
	}
	if err != nil {
		klog.ErrorS(err, "QEMU capabilities not used; each launcher probes QEMU itself", "file", path)
		return ""
	}
	klog.InfoS("QEMU capabilities for the launchers", "file", path, "bytes", len(data))
	return string(data)
}
