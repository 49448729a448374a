// Package app is the command line of virt-api: its flags, their validation, and turning
// them into a running server.
package app

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/spf13/pflag"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/hangarvm/hangar/pkg/admission/eviction"
	"github.com/hangarvm/hangar/pkg/admission/noderestriction"
	"github.com/hangarvm/hangar/pkg/admission/podpolicy"
	"github.com/hangarvm/hangar/pkg/admission/quota"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apiserver"
	"github.com/hangarvm/hangar/pkg/nodeclient"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstance"
)

// etcdPathPrefix is where virt-api keeps its objects in etcd (under it, <group>/<resource>).
// It differs from kube-apiserver's /registry so the two can never collide in a shared etcd.
const etcdPathPrefix = "/hangar"

// embeddedEtcdPending is the etcd server list until the embedded etcd has an address.
const embeddedEtcdPending = "embedded-etcd-pending"

// Options are virt-api's flags.
type Options struct {
	RecommendedOptions *genericoptions.RecommendedOptions

	// EmbeddedEtcdDir, when set, runs etcd inside virt-api with its data there.
	EmbeddedEtcdDir string
	// Standalone runs without a kube-apiserver: no delegated authentication, authorization or
	// admission webhooks.
	Standalone bool
	// InsecureDisableDelegatedAuth must accompany Standalone: every client is then an admin.
	InsecureDisableDelegatedAuth bool
	// WriteKubeconfig is where a standalone virt-api writes a kubeconfig for kubectl.
	WriteKubeconfig string
	// Handlers says how to reach the node agents (virt-handler).
	Handlers nodeclient.Config
	// ShutdownDelay keeps a terminating virt-api serving (and failing /readyz) while the
	// Service's endpoints and kube-apiserver's aggregator stop sending it requests.
	ShutdownDelay time.Duration
	// NodeAgents are the users that act for one node each (virt-handler): virt-api limits
	// them to the instances on the node their credential is bound to.
	NodeAgents []string
	// LauncherPods configures the checks of launcher pods at instance create and VM start.
	LauncherPods LauncherPodOptions
	// AuthorizeWebhookCallers authorizes calls of the eviction webhook as any other request
	// instead of leaving its path open.
	AuthorizeWebhookCallers bool
	// StreamsPerUser and StreamsPerInstance bound the consoles, VNC displays and screenshots
	// open at once through this virt-api.
	StreamsPerUser, StreamsPerInstance int
}

// LauncherPodOptions configure the HangarLauncherPod admission plugin (pkg/admission/podpolicy).
type LauncherPodOptions struct {
	// ConfigNamespace and ConfigName locate virt-controller's cluster configuration, so the
	// pod checked is the pod virt-controller will create.
	ConfigNamespace, ConfigName string
	// PodSecurityDefaultLevel and PodSecurityDefaultVersion stand in for kube-apiserver's
	// PodSecurityConfiguration defaults, which virt-api cannot read.
	PodSecurityDefaultLevel, PodSecurityDefaultVersion string
	// PodSecurityExemptNamespaces are exempt in kube-apiserver's PodSecurityConfiguration.
	PodSecurityExemptNamespaces []string
	// PodSecurityExempt: kube-apiserver's PodSecurityConfiguration exempts virt-controller's
	// user (the creator of launcher pods); Pod Security is not checked.
	PodSecurityExempt bool
}

// NewOptions returns virt-api's options with their defaults.
func NewOptions() *Options {
	o := &Options{
		RecommendedOptions: genericoptions.NewRecommendedOptions(etcdPathPrefix,
			apiserver.Codecs.LegacyCodec(v1.SchemeGroupVersion)),
	}
	// Objects are stored as kubevirt.io/v1, in protobuf (applyStorageCodec).
	o.RecommendedOptions.Etcd.DefaultStorageMediaType = defaultStorageMediaType
	o.RecommendedOptions.SecureServing.BindPort = 8443
	// kube-apiserver's priority and fairness has already queued every request it proxies here
	// and holds its seat until virt-api answers; a second queue costs each request ~4 % of
	// virt-api's CPU and adds nothing. virt-api limits what is in flight instead
	// (--max-requests-inflight, --max-mutating-requests-inflight).
	o.RecommendedOptions.Features.EnablePriorityAndFairness = false
	o.Handlers = nodeclient.Config{Namespace: "hangar", Selector: "app.kubernetes.io/name=virt-handler", Port: 18186}
	o.NodeAgents = []string{noderestriction.DefaultAgent}
	o.StreamsPerUser, o.StreamsPerInstance = virtualmachineinstance.DefaultStreamsPerUser, virtualmachineinstance.DefaultStreamsPerInstance
	// The node agents' admission plugin, on by default, right after NamespaceLifecycle and
	// before the admission policies and webhooks.
	admissionOpts := o.RecommendedOptions.Admission
	noderestriction.Register(admissionOpts.Plugins, func() noderestriction.Agents { return noderestriction.NewAgents(o.NodeAgents...) })
	admissionOpts.RecommendedPluginOrder = slices.Insert(slices.Clone(admissionOpts.RecommendedPluginOrder), 1, noderestriction.PluginName)
	o.LauncherPods = LauncherPodOptions{ConfigNamespace: "hangar", ConfigName: "hangar-config",
		PodSecurityDefaultLevel: "privileged", PodSecurityDefaultVersion: "latest"}
	// Launcher pods are checked last, after the webhooks and policies of the cluster.
	podpolicy.Register(admissionOpts.Plugins)
	admissionOpts.RecommendedPluginOrder = append(admissionOpts.RecommendedPluginOrder, podpolicy.PluginName)
	// Quotas charge a create only once everything else admitted it, as in kube-apiserver,
	// where ResourceQuota is the last validating plugin.
	quota.Register(admissionOpts.Plugins)
	admissionOpts.RecommendedPluginOrder = append(admissionOpts.RecommendedPluginOrder, quota.PluginName)
	return o
}

// AddFlags adds the flags to a flag set.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.RecommendedOptions.AddFlags(fs)
	fs.StringVar(&o.EmbeddedEtcdDir, "embedded-etcd-dir", o.EmbeddedEtcdDir,
		"Run an embedded etcd with its data in this directory instead of using --etcd-servers.")
	fs.BoolVar(&o.Standalone, "standalone", o.Standalone,
		"Run without a kube-apiserver, for development: no delegated authentication, authorization or admission webhooks. Needs --insecure-disable-delegated-auth.")
	fs.BoolVar(&o.InsecureDisableDelegatedAuth, "insecure-disable-delegated-auth", o.InsecureDisableDelegatedAuth,
		"With --standalone: serve every client as a cluster admin. Never use it where others can reach the port.")
	fs.StringVar(&o.WriteKubeconfig, "write-kubeconfig", o.WriteKubeconfig,
		"With --standalone: write a kubeconfig for kubectl to this file.")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay-duration", o.ShutdownDelay,
		"After SIGTERM, keep serving this long with /readyz failing, so that no request is routed to a server that has stopped.")
	fs.StringSliceVar(&o.NodeAgents, "node-agent-username", o.NodeAgents,
		"A user that is a node agent (virt-handler's ServiceAccount): it may only list and watch the instances on the node its "+
			"credential is bound to and write their status. Repeat for several; an empty value leaves none.")
	h := &o.Handlers
	fs.StringVar(&h.Namespace, "handler-namespace", h.Namespace, "Namespace of the virt-handler pods.")
	fs.StringVar(&h.Selector, "handler-selector", h.Selector, "Label selector of the virt-handler pods.")
	fs.IntVar(&h.Port, "handler-port", h.Port, "HTTPS port of virt-handler.")
	fs.StringVar(&h.CAFile, "handler-ca-file", h.CAFile, "CA of the nodes' identities (virt-controller's signer hangarvm.io/migration), read again when it changes: "+
		"each virt-handler must serve with the identity of the node it is dialled for.")
	fs.StringVar(&h.CertFile, "handler-client-cert-file", h.CertFile, "Client certificate virt-api presents to virt-handler.")
	fs.StringVar(&h.KeyFile, "handler-client-key-file", h.KeyFile, "Key of --handler-client-cert-file.")
	fs.StringVar(&h.StaticAddress, "handler-address", h.StaticAddress,
		"For development: reach every node's virt-handler at this URL instead of finding the handler pod of the node.")
	fs.BoolVar(&o.AuthorizeWebhookCallers, "authorize-webhook-callers", o.AuthorizeWebhookCallers,
		"Authorize calls of the eviction webhook ("+eviction.Path+") as any non-resource request: the caller needs the verb post on that path "+
			"(ClusterRole hangar:webhook-caller). Needs a kube-apiserver whose admission configuration gives it credentials for virt-api's Service. "+
			"Off, the path is open, as kube-apiserver calls webhooks without credentials by default.")
	fs.IntVar(&o.StreamsPerUser, "max-streams-per-user", o.StreamsPerUser,
		"Consoles, VNC displays and screenshots one user may have open at once through this virt-api; more are refused with 429.")
	fs.IntVar(&o.StreamsPerInstance, "max-streams-per-instance", o.StreamsPerInstance,
		"Consoles, VNC displays and screenshots of one instance open at once through this virt-api; more are refused with 429.")
	lp := &o.LauncherPods
	fs.StringVar(&lp.ConfigNamespace, "config-namespace", lp.ConfigNamespace,
		"Namespace of virt-controller's cluster configuration ConfigMap, read to build the launcher pods that admission checks.")
	fs.StringVar(&lp.ConfigName, "config-name", lp.ConfigName, "Name of virt-controller's cluster configuration ConfigMap.")
	fs.StringVar(&lp.PodSecurityDefaultLevel, "pod-security-default-level", lp.PodSecurityDefaultLevel,
		"Pod Security level of namespaces without the pod-security.kubernetes.io/enforce label: the 'enforce' default of kube-apiserver's PodSecurityConfiguration, which virt-api cannot read.")
	fs.StringVar(&lp.PodSecurityDefaultVersion, "pod-security-default-version", lp.PodSecurityDefaultVersion,
		"Pod Security version (latest or v1.N) of namespaces without the pod-security.kubernetes.io/enforce-version label: 'enforce-version' of kube-apiserver's PodSecurityConfiguration.")
	fs.StringSliceVar(&lp.PodSecurityExemptNamespaces, "pod-security-exempt-namespaces", lp.PodSecurityExemptNamespaces,
		"Namespaces exempt from Pod Security in kube-apiserver's PodSecurityConfiguration: their launcher pods are not checked against it.")
	fs.BoolVar(&lp.PodSecurityExempt, "pod-security-exempt", lp.PodSecurityExempt,
		"kube-apiserver's PodSecurityConfiguration exempts virt-controller's ServiceAccount, which creates the launcher pods: do not check them against Pod Security.")
}

// Complete fills in what follows from the flags.
func (o *Options) Complete() error {
	if o.EmbeddedEtcdDir != "" {
		if len(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList) > 0 {
			return errors.New("--embedded-etcd-dir and --etcd-servers are mutually exclusive")
		}
		// Run replaces this with the embedded etcd's address once it listens; until then it
		// stands in for --etcd-servers, which validation requires.
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{embeddedEtcdPending}
	}
	if o.Standalone {
		// Without a kube-apiserver there is nobody to delegate to, no core API for admission
		// webhooks and flow-control objects.
		o.RecommendedOptions.Authentication = nil
		o.RecommendedOptions.Authorization = nil
		o.RecommendedOptions.CoreAPI = nil
		o.RecommendedOptions.Admission = nil
		o.RecommendedOptions.Features.EnablePriorityAndFairness = false
		if o.RecommendedOptions.SecureServing.BindAddress.IsUnspecified() {
			// Every client is an admin: do not listen beyond this machine unless told to.
			o.RecommendedOptions.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
		}
	} else if !o.AuthorizeWebhookCallers {
		// kube-apiserver calls admission webhooks without credentials unless its admission
		// configuration gives it some, so the eviction webhook is open as /readyz is. It
		// acts only on what it reads back from the API (pkg/admission/eviction).
		o.RecommendedOptions.Authorization.AlwaysAllowPaths = append(o.RecommendedOptions.Authorization.AlwaysAllowPaths, eviction.Path)
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	errs := o.RecommendedOptions.Validate()
	if o.Standalone && !o.InsecureDisableDelegatedAuth {
		errs = append(errs, errors.New("--standalone has no kube-apiserver to delegate authentication and authorization to: "+
			"pass --insecure-disable-delegated-auth to run without them"))
	}
	if !o.Standalone && o.InsecureDisableDelegatedAuth {
		errs = append(errs, errors.New("--insecure-disable-delegated-auth is only for --standalone"))
	}
	if o.AuthorizeWebhookCallers && o.Standalone {
		errs = append(errs, errors.New("--authorize-webhook-callers needs delegated authorization; --standalone has none"))
	}
	if o.StreamsPerUser < 1 || o.StreamsPerInstance < 1 {
		errs = append(errs, errors.New("--max-streams-per-user and --max-streams-per-instance must be at least 1"))
	}
	if o.WriteKubeconfig != "" && !o.Standalone {
		errs = append(errs, errors.New("--write-kubeconfig is only for --standalone; with a kube-apiserver use its kubeconfig"))
	}
	if _, err := podpolicy.ParseLevelVersion(o.LauncherPods.PodSecurityDefaultLevel, o.LauncherPods.PodSecurityDefaultVersion); err != nil {
		errs = append(errs, fmt.Errorf("--pod-security-default-level/--pod-security-default-version: %w", err))
	}
	if o.ShutdownDelay < 0 {
		errs = append(errs, errors.New("--shutdown-delay-duration must not be negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid flags: %w", errors.Join(errs...))
	}
	return nil
}
