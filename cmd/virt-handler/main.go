// Command virt-handler is Hangar's node agent (a DaemonSet): it drives the launchers of the
// instances scheduled to its node, reports their status, serves their consoles and VNC to
// virt-api, and offers /dev/kvm and /dev/net/tun to launcher pods through kubelet's
// device-plugin API. It can restart at any time: running guests are picked up untouched.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/handler"
	"github.com/hangarvm/hangar/pkg/handler/deviceplugin"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/handler/vmimetrics"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
	"github.com/hangarvm/hangar/pkg/metricsserver"
	"github.com/hangarvm/hangar/pkg/migration/identity"
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
		migrationListen                = ":18187"
		migrationCA                    string
		metricsOpts                    = metricsserver.Options{Address: ":8443"}
		qemuCapabilities               string
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
	fs.StringVar(&migrationListen, "migration-listen-address", migrationListen, "address of the migration proxy (TLS, this node's migration identity); empty to disable live migration")
	fs.StringVar(&migrationCA, "migration-ca-file", "", "CA certificate of the nodes' migration identities (virt-controller's signer "+identity.SignerName+")")
	fs.StringVar(&metricsOpts.Address, "metrics-bind-address", metricsOpts.Address, "HTTPS address serving /metrics (KubeVirt's per-VMI metrics) to callers kube-apiserver allows to get /metrics; empty or 0 to disable")
	fs.StringVar(&metricsOpts.CertFile, "metrics-tls-cert-file", "", "serving certificate of /metrics; self-signed when empty")
	fs.StringVar(&metricsOpts.KeyFile, "metrics-tls-private-key-file", "", "serving key of /metrics")
	fs.BoolVar(&metricsOpts.Insecure, "metrics-insecure-loopback", false, "serve /metrics over plain HTTP without authentication (development; a loopback --metrics-bind-address only)")
	fs.StringVar(&qemuCapabilities, "qemu-capabilities-file", "",
		"libvirt's capabilities file of QEMU, written on this node by the pod's init container (virt-launcher --write-qemu-capabilities) "+
			"from the launchers' root file system; launchers seed libvirt's cache with it instead of probing QEMU. None when empty or missing")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	pflag.Parse()
	if cfg.NodeName == "" {
		return errors.New("--node-name (or $NODE_NAME) is required")
	}

	// The handler talks to the kubevirt.io API (no Secrets, no pods): through the cluster
	// with its pod's ServiceAccount token, which names its node to virt-api. Of the core
	// API it uses certificates.k8s.io, for its node's migration identity, and TokenReviews
	// and SubjectAccessReviews of /metrics callers.
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
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	if qemuCapabilities != "" {
		cfg.QEMUCapabilities = readQEMUCapabilities(qemuCapabilities)
	}
	if cfg.Pods, err = podsockets.OpenRoot(podsDir); err != nil {
		return err
	}
	defer cfg.Pods.Close()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	var migrationLn net.Listener
	if migrationListen != "" {
		if migrationCA == "" {
			return errors.New("--migration-ca-file is required with --migration-listen-address")
		}
		certs, err := migrationIdentity(kube, cfg.NodeName)
		if err != nil {
			return err
		}
		certs.Start()
		defer certs.Stop()
		cfg.Migration = &handler.MigrationTLS{Node: cfg.NodeName, Certificate: certs.Current, CAFile: migrationCA}
		if migrationLn, err = net.Listen("tcp", migrationListen); err != nil {
			return err
		}
	}
	c := handler.NewController(cfg, kubevirt)
	if migrationLn != nil {
		go func() {
			klog.InfoS("serving migrations", "address", migrationListen)
			if err := c.ServeMigrations(ctx, migrationLn); err != nil {
				klog.ErrorS(err, "migration proxy stopped")
				cancel()
			}
		}()
	}

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

// migrationIdentity is the certificate manager of this node's migration identity: a key of
// its own, the certificate from virt-controller's signer, renewed before it expires. Both
// live in memory only: a restarted handler asks again.
func migrationIdentity(kube kubernetes.Interface, node string) (certificate.Manager, error) {
	return certificate.NewManager(&certificate.Config{
		ClientsetFn:      func(*tls.Certificate) (kubernetes.Interface, error) { return kube, nil },
		Template:         identity.Template(node),
		SignerName:       identity.SignerName,
		Usages:           identity.Usages,
		CertificateStore: &memoryStore{},
		Name:             "migration",
	})
}

// memoryStore keeps the identity in memory (certificate.Store).
type memoryStore struct {
	mu   sync.Mutex
	cert *tls.Certificate
}

func (s *memoryStore) Current() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert == nil {
		e := certificate.NoCertKeyError("no migration identity yet")
		return nil, &e
	}
	return s.cert, nil
}

func (s *memoryStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cert = &c
	return s.cert, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, err
	}
	// Protobuf, as the kubelet speaks to kube-apiserver: the instances' status updates and
	// the watch of the node's instances are the handler's whole traffic.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg, nil
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
