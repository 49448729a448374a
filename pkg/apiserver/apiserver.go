// Package apiserver assembles virt-api: a k8s.io/apiserver generic server that serves the
// kubevirt.io group from etcd, following the Config → Complete → New pattern of
// kubernetes/sample-apiserver.
package apiserver

import (
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	"github.com/hangarvm/hangar/pkg/admission/eviction"
	"github.com/hangarvm/hangar/pkg/admission/podpolicy"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1alpha3"
	"github.com/hangarvm/hangar/pkg/registry/action"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachine"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstance"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstancemigration"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstancereplicaset"
)

// ExtraConfig holds virt-api's own configuration, beyond the generic server's.
type ExtraConfig struct {
	// KubeClientConfig reaches kube-apiserver (pods, for forced restarts); nil standalone.
	KubeClientConfig *restclient.Config
	// Nodes reaches the node agents for guest commands and streams; nil when there are none.
	Nodes virtualmachineinstance.Nodes
	// LauncherPods checks the launcher pod of a VM being started; nil when the checks are off
	// (standalone, or the HangarLauncherPod admission plugin disabled).
	LauncherPods *podpolicy.Checker
}

// Config is the configuration of virt-api.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
}

// CompletedConfig is a Config with its defaults filled in; only it can build a server.
type CompletedConfig struct {
	*completedConfig
}

// Server is a running virt-api.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// Complete fills in the defaults of the configuration.
func (cfg *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		GenericConfig: cfg.GenericConfig.Complete(),
		ExtraConfig:   &cfg.ExtraConfig,
	}}
}

// New builds virt-api and installs the kubevirt.io group, v1 preferred and v1alpha3 as a
// deprecated alias, both backed by the same storage.
func (c CompletedConfig) New() (*Server, error) {
	genericServer, err := c.GenericConfig.New("hangar-virt-api", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}

	optsGetter := c.GenericConfig.RESTOptionsGetter
	vms, err := virtualmachine.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	vms.VirtualMachine.SetAuthorizer(c.GenericConfig.Authorization.Authorizer)
	vmis, err := virtualmachineinstance.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	replicaSets, err := virtualmachineinstancereplicaset.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	migrations, err := virtualmachineinstancemigration.NewStorage(Scheme, optsGetter, vmis.VirtualMachineInstance)
	if err != nil {
		return nil, err
	}
	var pods virtualmachine.LauncherPods
	if c.ExtraConfig.KubeClientConfig != nil {
		kube, err := kubernetes.NewForConfig(c.ExtraConfig.KubeClientConfig)
		if err != nil {
			return nil, err
		}
		pods = launcherPods{kube: kube}
		vms.VirtualMachine.SetClaimExists(claimExists(kube))
		// Evictions of launcher pods become evacuations (needs the pods of kube-apiserver).
		checker := c.ExtraConfig.LauncherPods
		genericServer.Handler.NonGoRestfulMux.Handle(eviction.Path, eviction.New(launcherPods{kube: kube},
			evacuations{vmis: vmis.VirtualMachineInstance, status: vmis.Status},
			func() kubevirt.EvictionStrategy {
				if checker == nil {
					return ""
				}
				return kubevirt.EvictionStrategy(checker.ClusterConfig().EvictionStrategy)
			}))
	}
	vmActions := virtualmachine.NewActions(vms, vmis.VirtualMachineInstance, pods)
	vmActions.SetMigrations(migrations.VirtualMachineInstanceMigration)
	if c.ExtraConfig.LauncherPods != nil {
		vmActions.CheckStarts(c.ExtraConfig.LauncherPods)
	}
	commands := virtualmachineinstance.NewCommands(vmis.VirtualMachineInstance, c.ExtraConfig.Nodes)
	authz := c.GenericConfig.Authorization.Authorizer
	console := virtualmachineinstance.NewStreamREST(vmis.VirtualMachineInstance, c.ExtraConfig.Nodes, authz, "console")
	vnc := virtualmachineinstance.NewStreamREST(vmis.VirtualMachineInstance, c.ExtraConfig.Nodes, authz, "vnc")
	screenshot := virtualmachineinstance.NewScreenshotREST(vmis.VirtualMachineInstance, c.ExtraConfig.Nodes, authz)

	resources := map[string]rest.Storage{
		"virtualmachines":                          vms.VirtualMachine,
		"virtualmachines/status":                   vms.Status,
		"virtualmachines/start":                    action.New(vmActions.Start),
		"virtualmachines/stop":                     action.New(vmActions.Stop),
		"virtualmachines/restart":                  action.New(vmActions.Restart),
		"virtualmachines/migrate":                  action.New(vmActions.Migrate),
		"virtualmachineinstances":                  vmis.VirtualMachineInstance,
		"virtualmachineinstances/status":           vmis.Status,
		"virtualmachineinstances/pause":            action.New(commands.Pause),
		"virtualmachineinstances/unpause":          action.New(commands.Unpause),
		"virtualmachineinstances/softreboot":       action.New(commands.SoftReboot),
		"virtualmachineinstances/console":          console,
		"virtualmachineinstances/vnc":              vnc,
		"virtualmachineinstancereplicasets":        replicaSets.VirtualMachineInstanceReplicaSet,
		"virtualmachineinstancereplicasets/status": replicaSets.Status,
		"virtualmachineinstancereplicasets/scale":  replicaSets.Scale,
		"virtualmachineinstancemigrations":         migrations.VirtualMachineInstanceMigration,
		"virtualmachineinstancemigrations/status":  migrations.Status,
	}

	group := genericapiserver.NewDefaultAPIGroupInfo(kubevirt.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap[v1.SchemeGroupVersion.Version] = resources
	group.VersionedResourcesStorageMap[v1alpha3.SchemeGroupVersion.Version] = resources
	if err := genericServer.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	installSubresourcesGroup(genericServer, []subresourceAction{
		{resource: "virtualmachines", kind: "VirtualMachine", subresource: "start", doc: "start a VirtualMachine", options: v1.StartOptions{}, act: vmActions.Start},
		{resource: "virtualmachines", kind: "VirtualMachine", subresource: "stop", doc: "stop a VirtualMachine", options: v1.StopOptions{}, act: vmActions.Stop},
		{resource: "virtualmachines", kind: "VirtualMachine", subresource: "restart", doc: "restart a VirtualMachine", options: v1.RestartOptions{}, act: vmActions.Restart},
		{resource: "virtualmachines", kind: "VirtualMachine", subresource: "migrate", doc: "live migrate the VirtualMachine's instance to another node", options: v1.MigrateOptions{}, act: vmActions.Migrate},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "pause", doc: "pause a running instance", options: v1.PauseOptions{}, act: commands.Pause},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "unpause", doc: "unpause a paused instance", options: v1.UnpauseOptions{}, act: commands.Unpause},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "softreboot", doc: "ask the guest to reboot (ACPI)", act: commands.SoftReboot},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "freeze", doc: "freeze the guest's file systems through the guest agent", options: v1.FreezeUnfreezeTimeout{}, act: commands.Freeze},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "unfreeze", doc: "thaw the guest's file systems", act: commands.Unfreeze},
	}, []subresourceStream{
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "console", doc: "the serial console, as a websocket (subprotocol plain.kubevirt.io)", rest: console},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "vnc", doc: "the VNC display, as a websocket (subprotocol plain.kubevirt.io)", rest: vnc},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "vnc/screenshot", doc: "one frame of the VNC display, as a PNG", rest: screenshot},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "guestosinfo", doc: "what the guest agent reports of its guest",
			rest: virtualmachineinstance.NewGuestAgentREST(vmis.VirtualMachineInstance, c.ExtraConfig.Nodes, "guestosinfo"), returns: v1.VirtualMachineInstanceGuestAgentInfo{}},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "userlist", doc: "the users logged in to the guest, as its agent reports them",
			rest: virtualmachineinstance.NewGuestAgentREST(vmis.VirtualMachineInstance, c.ExtraConfig.Nodes, "userlist"), returns: v1.VirtualMachineInstanceGuestOSUserList{}},
		{resource: "virtualmachineinstances", kind: "VirtualMachineInstance", subresource: "filesystemlist", doc: "the guest's file systems, as its agent reports them",
			rest: virtualmachineinstance.NewGuestAgentREST(vmis.VirtualMachineInstance, c.ExtraConfig.Nodes, "filesystemlist"), returns: v1.VirtualMachineInstanceFileSystemList{}},
	})
	return &Server{GenericAPIServer: genericServer}, nil
}

// v1alpha3Prefix is where the deprecated alias is served.
var v1alpha3Prefix = "/apis/" + v1alpha3.SchemeGroupVersion.String() + "/"

// v1alpha3Warning is shown by kubectl and client-go on every v1alpha3 request.
var v1alpha3Warning = `299 - "` + v1alpha3.SchemeGroupVersion.String() + ` is deprecated; use ` + v1.SchemeGroupVersion.String() + `"`

// WithDeprecationWarnings tells clients of kubevirt.io/v1alpha3 to move to v1. The versions
// share Go types, so the API machinery's per-type deprecation cannot tell them apart.
func WithDeprecationWarnings(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, v1alpha3Prefix) {
			w.Header().Add("Warning", v1alpha3Warning)
		}
		handler.ServeHTTP(w, req)
	})
}
