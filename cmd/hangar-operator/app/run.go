package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/google/uuid"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	kubevirtclient "github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	operatorclient "github.com/hangarvm/hangar/pkg/generated/operator/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/kubeclient"
	"github.com/hangarvm/hangar/pkg/leaderelect"
	"github.com/hangarvm/hangar/pkg/operator/controller"
)

// Run reconciles until ctx ends, while it leads when LeaderElect.
func (o *Options) Run(ctx context.Context) error {
	clients, err := newClients(o.Kubeconfig)
	if err != nil {
		return err
	}
	c, err := controller.New(clients, controller.Config{Version: o.Version, Images: o.Images, Resync: o.Resync})
	if err != nil {
		return err
	}
	if !o.LeaderElect {
		return c.Run(ctx)
	}
	le := o.LeaderElection
	host, _ := os.Hostname()
	le.Identity = host + "_" + uuid.NewString()
	err = leaderelect.Run(ctx, clients.Kube, le, c.Run)
	if errors.Is(err, leaderelect.ErrLostLeadership) {
		klog.InfoS("Lost leadership, exiting", "identity", le.Identity)
	}
	return err
}

// newClients builds the operator's clients: protobuf for kube's types, JSON for the rest
// (custom resources, the aggregator's, server-side apply).
func newClients(kubeconfig string) (controller.Clients, error) {
	cfg, err := kubeclient.Config(kubeconfig, 50, 100)
	if err != nil {
		return controller.Clients{}, fmt.Errorf("client configuration: %w", err)
	}
	cfg.UserAgent = "hangar-operator"
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	var c controller.Clients
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.KubeVirt, err = kubevirtclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(jsonCfg); err != nil {
		return c, err
	}
	if c.Operator, err = operatorclient.NewForConfig(jsonCfg); err != nil {
		return c, err
	}
	if c.Aggregator, err = aggregatorclient.NewForConfig(jsonCfg); err != nil {
		return c, err
	}
	if c.APIExtensions, err = apiextensionsclient.NewForConfig(jsonCfg); err != nil {
		return c, err
	}
	return c, nil
}
