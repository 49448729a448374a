package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
	snapshotclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/controller/manager"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	cloneclient "github.com/hangarvm/hangar/pkg/generated/clone/clientset/versioned"
	exportclient "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
	vmsnapshotclient "github.com/hangarvm/hangar/pkg/generated/snapshot/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/kubeclient"
	"github.com/hangarvm/hangar/pkg/leaderelect"
	"github.com/hangarvm/hangar/pkg/metricsserver"
)

// Run serves /healthz and /metrics and runs the controllers, once this replica leads when
// LeaderElect, until ctx ends, SIGINT or SIGTERM arrives, or the leadership is lost.
func (o *Options) Run(ctx context.Context) error {
	kubeCfg, err := o.restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	kvCfg := kubeCfg
	if o.KubevirtKubeconfig != "" {
		if kvCfg, err = o.restConfig(o.KubevirtKubeconfig); err != nil {
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
	if o.Controllers.Instancetypes, err = instancetypeclient.NewForConfig(kvCfg); err != nil {
		return err
	}
	if o.Controllers.Snapshots, err = vmsnapshotclient.NewForConfig(kvCfg); err != nil {
		return err
	}
	if o.Controllers.Clones, err = cloneclient.NewForConfig(kvCfg); err != nil {
		return err
	}
	if o.Controllers.Exports, err = exportclient.NewForConfig(kvCfg); err != nil {
		return err
	}
	// VolumeSnapshots are custom resources of kube-apiserver, served in JSON only.
	jsonCfg := rest.CopyConfig(kubeCfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	if o.Controllers.VolumeSnapshots, err = snapshotclient.NewForConfig(jsonCfg); err != nil {
		return err
	}
	if o.Controllers.Dynamic, err = dynamic.NewForConfig(jsonCfg); err != nil {
		return err
	}

	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	electionHealth := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	if o.HealthzAddress != "" && o.HealthzAddress != "0" {
		mux := http.NewServeMux()
		healthz.InstallHandler(mux, healthz.PingHealthz, electionHealth)
		server := &http.Server{Addr: o.HealthzAddress, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				klog.ErrorS(err, "Healthz server stopped")
				cancel()
			}
		}()
		defer server.Close()
	}
	if o.Metrics.Enabled() {
		// The metrics name every VM in the cluster: only callers allowed to get /metrics see
		// them (kube-apiserver decides, as for the handler's).
		srv, err := metricsserver.New(o.Metrics, legacyregistry.Handler(), kube)
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

	if !o.LeaderElect {
		return manager.Run(ctx, kubevirt, kube, o.Controllers)
	}
	le := o.LeaderElection
	host, _ := os.Hostname()
	le.Identity = host + "_" + uuid.NewString()
	le.Healthz = electionHealth
	err = leaderelect.Run(ctx, kube, le, func(ctx context.Context) error { return manager.Run(ctx, kubevirt, kube, o.Controllers) })
	if errors.Is(err, leaderelect.ErrLostLeadership) {
		klog.InfoS("Lost leadership, exiting", "identity", le.Identity)
	}
	return err
}

// restConfig is the configuration of virt-controller's clients of one kubeconfig.
func (o *Options) restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := kubeclient.Config(kubeconfig, o.QPS, o.Burst)
	if err != nil {
		return nil, fmt.Errorf("client configuration: %w", err)
	}
	cfg.UserAgent = "virt-controller"
	return cfg, nil
}
