package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/admission/noderestriction"
	"github.com/hangarvm/hangar/pkg/admission/podpolicy"
	"github.com/hangarvm/hangar/pkg/admission/quota"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	"github.com/hangarvm/hangar/pkg/apiserver"
	"github.com/hangarvm/hangar/pkg/apiserver/bodyguard"
	"github.com/hangarvm/hangar/pkg/apiserver/frontproxy"
	"github.com/hangarvm/hangar/pkg/apiserver/openapi"
	"github.com/hangarvm/hangar/pkg/etcd"
	generatedopenapi "github.com/hangarvm/hangar/pkg/generated/openapi"
	"github.com/hangarvm/hangar/pkg/nodeclient"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstance"
)

// kubeAPIVersion is the Kubernetes API level of the libraries virt-api is built on; it
// decides which generic-server features are on.
const kubeAPIVersion = "1.34"

// standaloneUser is who every request is in standalone mode.
var standaloneUser = &user.DefaultInfo{Name: "hangar-standalone-admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}

// Config turns the options into a server configuration.
func (o *Options) Config() (*apiserver.Config, error) {
	serving := o.RecommendedOptions.SecureServing
	if err := serving.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("create self-signed serving certificate: %w", err)
	}

	serverConfig := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	serverConfig.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString(kubeAPIVersion, "", "")

	serverConfig.OpenAPIConfig, serverConfig.OpenAPIV3Config = openapi.Configs(generatedopenapi.GetOpenAPIDefinitions, apiserver.Scheme)

	if err := o.applyStorageCodec(); err != nil {
		return nil, err
	}
	checkerOf := o.launcherPodChecks()
	if err := o.RecommendedOptions.ApplyTo(serverConfig); err != nil {
		return nil, err
	}
	checker := checkerOf()
	if checker != nil {
		// The cluster configuration is read from a ConfigMap informer of its own (one object,
		// by name); the namespace, quota and LimitRange informers are the generic server's.
		serverConfig.AddPostStartHookOrDie("hangar-launcher-pod-config", func(ctx genericapiserver.PostStartHookContext) error {
			return checker.Run(ctx)
		})
	}
	if path := o.RecommendedOptions.Etcd.EncryptionProviderConfigFilepath; path != "" {
		named, err := encryptedResources(path)
		if err != nil {
			return nil, err
		}
		serverConfig.RESTOptionsGetter = requireEncryptionConfig{RESTOptionsGetter: serverConfig.RESTOptionsGetter, path: path, named: named}
	}
	serverConfig.ShutdownDelayDuration = o.ShutdownDelay
	if auth := &serverConfig.Authentication; auth.Authenticator != nil && auth.RequestHeaderConfig != nil {
		// The aggregator's proxied requests, with its certificate's chain verified once.
		auth.Authenticator = frontproxy.New(auth.RequestHeaderConfig, auth.Authenticator)
	}
	if o.Standalone {
		klog.Warning("STANDALONE MODE: authentication and authorization are OFF; every client of " +
			serving.BindAddress.String() + " is a cluster admin. For development only.")
		serverConfig.Authentication.Authenticator = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
			return &authenticator.Response{User: standaloneUser}, true, nil
		})
		serverConfig.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	} else if serverConfig.Authorization.Authorizer != nil {
		// As kube-apiserver puts its Node authorizer before RBAC: the node agents' limits
		// first, then what RBAC grants.
		agents := noderestriction.NewAgents(o.NodeAgents...)
		serverConfig.Authorization.Authorizer = union.New(noderestriction.NewAuthorizer(agents), serverConfig.Authorization.Authorizer)
		klog.InfoS("Node agents are confined to their node's instances", "users", agents.Usernames())
	}
	buildChain := serverConfig.BuildHandlerChainFunc
	serverConfig.BuildHandlerChainFunc = func(handler http.Handler, c *genericapiserver.Config) http.Handler {
		// The guard sits inside authentication and authorization: it reads only the bodies
		// of requests that may write.
		return apiserver.WithDeprecationWarnings(buildChain(bodyguard.New(apiserver.Codecs, c.MaxRequestBodyBytes).Wrap(handler), c))
	}
	nodes, err := o.nodes(serverConfig.ClientConfig)
	if err != nil {
		return nil, err
	}
	return &apiserver.Config{
		GenericConfig: serverConfig,
		ExtraConfig: apiserver.ExtraConfig{KubeClientConfig: serverConfig.ClientConfig, Nodes: nodes, LauncherPods: checker,
			Streams: virtualmachineinstance.NewStreamLimits(o.StreamsPerUser, o.StreamsPerInstance)},
	}, nil
}

// launcherPodChecks arranges for the HangarLauncherPod admission plugin to get its checker
// when the admission chain is built; the function returned gives the checker afterwards, or
// nil when there is no admission (standalone) or the plugin is disabled.
func (o *Options) launcherPodChecks() func() *podpolicy.Checker {
	if o.RecommendedOptions.Admission == nil {
		return func() *podpolicy.Checker { return nil }
	}
	var checker *podpolicy.Checker
	o.RecommendedOptions.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		kube, err := kubernetes.NewForConfig(c.ClientConfig)
		if err != nil {
			return nil, err
		}
		lp := o.LauncherPods
		def, err := podpolicy.ParseLevelVersion(lp.PodSecurityDefaultLevel, lp.PodSecurityDefaultVersion)
		if err != nil {
			return nil, err
		}
		podSecurity, err := podpolicy.NewPodSecurity(def, lp.PodSecurityExemptNamespaces, lp.PodSecurityExempt)
		if err != nil {
			return nil, err
		}
		checker = podpolicy.New(c.SharedInformerFactory, kube, podpolicy.Config{
			ConfigNamespace: lp.ConfigNamespace, ConfigName: lp.ConfigName, PodSecurity: podSecurity})
		return []admission.PluginInitializer{podpolicy.NewInitializer(checker), quota.NewInitializer(quota.NewConfiguration(
			kubevirt.Resource("virtualmachines"), kubevirt.Resource("virtualmachineinstances"),
			kubevirt.Resource("virtualmachineinstancereplicasets"), kubevirt.Resource("virtualmachineinstancemigrations")))}, nil
	}
	return func() *podpolicy.Checker {
		if checker == nil || !checker.InUse() {
			return nil
		}
		return checker
	}
}

// nodes returns the client for node agents: through the cluster, or at a fixed address, or
// none when standalone without one.
func (o *Options) nodes(kubeConfig *rest.Config) (virtualmachineinstance.Nodes, error) {
	var kube kubernetes.Interface
	if kubeConfig != nil {
		var err error
		if kube, err = kubernetes.NewForConfig(kubeConfig); err != nil {
			return nil, err
		}
	}
	if kube == nil && o.Handlers.StaticAddress == "" {
		return nil, nil
	}
	return nodeclient.New(o.Handlers, kube)
}

// Run starts the embedded etcd if asked to, waits until etcd answers, then serves until ctx
// ends.
func (o *Options) Run(ctx context.Context) error {
	if o.EmbeddedEtcdDir != "" {
		server, err := etcd.Start(etcd.Config{Dir: o.EmbeddedEtcdDir})
		if err != nil {
			return err
		}
		defer server.Stop()
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{server.ClientURL}
		klog.InfoS("Embedded etcd serving", "url", server.ClientURL, "dir", o.EmbeddedEtcdDir)
	}

	if err := waitForEtcd(ctx, o.RecommendedOptions.Etcd.StorageConfig); err != nil {
		return err
	}
	config, err := o.Config()
	if err != nil {
		return err
	}
	server, err := config.Complete().New()
	if err != nil {
		return err
	}
	if o.WriteKubeconfig != "" {
		if err := o.writeKubeconfig(); err != nil {
			return err
		}
	}
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// writeKubeconfig writes a kubeconfig that trusts the serving certificate, so kubectl talks
// to a standalone virt-api without --insecure-skip-tls-verify.
func (o *Options) writeKubeconfig() error {
	serving := o.RecommendedOptions.SecureServing
	certFile := serving.ServerCert.CertKey.CertFile
	if certFile == "" {
		certFile = filepath.Join(serving.ServerCert.CertDirectory, serving.ServerCert.PairName+".crt")
	}
	ca, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("read serving certificate for the kubeconfig: %w", err)
	}
	host := serving.BindAddress.String()
	if serving.BindAddress.IsUnspecified() {
		host = "127.0.0.1"
	}
	const name = "hangar-standalone"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   "https://" + net.JoinHostPort(host, fmt.Sprint(serving.BindPort)),
		CertificateAuthorityData: ca,
		TLSServerName:            "localhost",
	}
	// Any credential is accepted; without one kubectl stops to prompt for a password.
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "standalone"}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	if err := os.MkdirAll(filepath.Dir(o.WriteKubeconfig), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, o.WriteKubeconfig)
}
