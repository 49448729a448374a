// Package kubeclient builds the client configuration Hangar's daemons (virt-controller,
// virt-handler) reach the API servers with.
package kubeclient

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is the configuration of a daemon's clients: its pod's ServiceAccount (in-cluster)
// when kubeconfig is empty, else the kubeconfig's current context. qps and burst limit the
// client's requests; zero leaves client-go's defaults.
//
// Requests and responses are protobuf, to kube-apiserver and virt-api alike, as kube's own
// controllers and the kubelet speak: the clientsets prefer it already; this makes it the rule
// for every client of the configuration. JSON stays accepted for what has no protobuf.
func Config(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
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
	cfg.QPS, cfg.Burst = qps, burst
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg, nil
}
