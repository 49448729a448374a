// Package apiserver assembles virt-api: a k8s.io/apiserver generic server that serves the
// kubevirt.io group from etcd, following the Config → Complete → New pattern of
// kubernetes/sample-apiserver.
package apiserver

import (
	"context"
	"net/http"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	"github.com/hangarvm/hangar/pkg/admission/eviction"
	"github.com/hangarvm/hangar/pkg/admission/podpolicy"
	"github.com/hangarvm/hangar/pkg/apis/clone"
	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/export"
	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/v1alpha3"
	"github.com/hangarvm/hangar/pkg/apis/snapshot"
	snapshotv1beta1 "github.com/hangarvm/hangar/pkg/apis/snapshot/v1beta1"
	"github.com/hangarvm/hangar/pkg/apiserver/openapi"
	"github.com/hangarvm/hangar/pkg/registry/action"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachine"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineclone"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineexport"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstance"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstancemigration"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstancereplicaset"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstancetype"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachinepreference"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachinerestore"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachinesnapshot"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachinesnapshotcontent"
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
	// Streams bounds the consoles, VNC displays, screenshots and port-forwards open per user and per
	// instance; nil for the defaults.
	Streams *virtualmachineinstance.StreamLimits
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
// deprecated alias, both backed by the same storage, instancetype.kubevirt.io/v1beta1,
// snapshot.kubevirt.io/v1beta1, clone.kubevirt.io/v1beta1 and export.kubevirt.io/v1beta1.
func (c CompletedConfig) New() (*Server, error) {
	genericServer, err := c.GenericConfig.New("hangar-virt-api", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}

	optsGetter := c.GenericConfig.RESTOptionsGetter
	authz := c.GenericConfig.Authorization.Authorizer
	streams := c.ExtraConfig.Streams
	if streams == nil {
		streams = virtualmachineinstance.NewStreamLimits(virtualmachineinstance.DefaultStreamsPerUser, virtualmachineinstance.DefaultStreamsPerInstance)
	}
	var kube kubernetes.Interface
	var dyn dynamic.Interface
	var addresses virtualmachineinstance.LauncherAddresses
	var cdiServed cdi.Served // a nil interface without a cluster
	var dataVolumes *cdiLookup
	if c.ExtraConfig.KubeClientConfig != nil {
		if kube, err = kubernetes.NewForConfig(c.ExtraConfig.KubeClientConfig); err != nil {
			return nil, err
		}
		if dyn, err = dynamic.NewForConfig(c.ExtraConfig.KubeClientConfig); err != nil {
			return nil, err
		}
		addresses = launcherPods{kube: kube}
		dataVolumes = newCDILookup(kube.Discovery(), dyn)
		cdiServed = dataVolumes
	}
	vmis, err := virtualmachineinstance.NewStorage(Scheme, optsGetter, c.ExtraConfig.Nodes, addresses, authz, streams, cdiServed)
	if err != nil {
		return nil, err
	}
	replicaSets, err := virtualmachineinstancereplicaset.NewStorage(Scheme, optsGetter, cdiServed)
	if err != nil {
		return nil, err
	}
	migrations, err := virtualmachineinstancemigration.NewStorage(Scheme, optsGetter, vmis.VirtualMachineInstance)
	if err != nil {
		return nil, err
	}
	instancetypes, err := virtualmachineinstancetype.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	preferences, err := virtualmachinepreference.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	vmInstancetypes := &virtualmachine.Instancetypes{
		Instancetypes: instancetypes.VirtualMachineInstancetype, ClusterInstancetypes: instancetypes.VirtualMachineClusterInstancetype,
		Preferences: preferences.VirtualMachinePreference, ClusterPreferences: preferences.VirtualMachineClusterPreference,
		Decoder: Codecs.UniversalDecoder(),
	}
	actionAdmission := &action.Admission{Chain: c.GenericConfig.AdmissionControl, Objects: admission.NewObjectInterfacesFromScheme(Scheme)}
	var hotplugClaims virtualmachineinstance.ClaimGetter
	if kube != nil {
		hotplugClaims = claimGetter(kube)
	}
	vmis.Volumes = virtualmachineinstance.NewVolumes(vmis.VirtualMachineInstance, actionAdmission, cdiServed, hotplugClaims)
	vmDeps := virtualmachine.Dependencies{Instancetypes: vmInstancetypes, Decoder: Codecs.UniversalDecoder(), VMIs: vmis.VirtualMachineInstance, Migrations: migrations.VirtualMachineInstanceMigration,
		Authorizer: authz, Admission: actionAdmission, InstanceVolumes: vmis.Volumes}
	if c.ExtraConfig.LauncherPods != nil {
		vmDeps.Starts = c.ExtraConfig.LauncherPods
	}
	if kube != nil {
		vmDeps.LauncherPods = launcherPods{kube: kube}
		vmInstancetypes.Revisions = func(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error) {
			return kube.AppsV1().ControllerRevisions(namespace).Get(ctx, name, metav1.GetOptions{})
		}
		vmDeps.ClaimExists = claimExists(kube)
		vmDeps.DataVolumes = dataVolumes
		vmDeps.Claims = claimGetter(kube)
		vmDeps.VolumeSources = volumeSources{dynamic: dyn}
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
	vms, err := virtualmachine.NewStorage(Scheme, optsGetter, vmDeps)
	if err != nil {
		return nil, err
	}
	vms.PortForward = vmis.PortForward.ForVMs(vms.VirtualMachine)
	if checker := c.ExtraConfig.LauncherPods; checker != nil {
		checker.ExpandTemplatesWith(vms.ExpandedTemplate)
	}

	resources := []serving.Resource{vms.Serving(), vmis.Serving(), replicaSets.Serving(), migrations.Serving()}
	if v2, v3 := c.GenericConfig.OpenAPIConfig, c.GenericConfig.OpenAPIV3Config; v2 != nil && v3 != nil {
		// The documents are built after New (v2 as the server starts, v3 when first asked for).
		openapi.Document(v2, v3, openapi.Prefixes{
			KubeVirt:     []string{"/apis/" + v1.SchemeGroupVersion.String(), "/apis/" + v1alpha3.SchemeGroupVersion.String()},
			Subresources: "/apis/" + SubresourcesGroupVersion.String(),
		}, resources)
	}
	storage := serving.Storage(resources...)
	group := genericapiserver.NewDefaultAPIGroupInfo(kubevirt.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap[v1.SchemeGroupVersion.Version] = storage
	group.VersionedResourcesStorageMap[v1alpha3.SchemeGroupVersion.Version] = storage
	if err := genericServer.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	installSubresourcesGroup(genericServer, resources, []serving.NamespaceRoute{{Name: "expand-vm-spec", Operation: "v1ExpandSpec",
		Doc:     "a VirtualMachine sent in the body as its instance will be made: the template expanded with its instance type and preference",
		Handler: vms.ExpandVMSpec.Handler, Reads: v1.VirtualMachine{}, Returns: v1.VirtualMachine{}}})

	instancetypeGroup := genericapiserver.NewDefaultAPIGroupInfo(instancetype.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	instancetypeGroup.VersionedResourcesStorageMap[instancetypev1beta1.SchemeGroupVersion.Version] =
		serving.Storage(append(instancetypes.Serving(), preferences.Serving()...)...)
	if err := genericServer.InstallAPIGroup(&instancetypeGroup); err != nil {
		return nil, err
	}

	// snapshot.kubevirt.io/v1beta1: snapshots, their contents and restores.
	snapshots, err := virtualmachinesnapshot.NewStorage(Scheme, optsGetter, authz)
	if err != nil {
		return nil, err
	}
	contents, err := virtualmachinesnapshotcontent.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	snapshotted := virtualmachinesnapshot.Snapshotted{Snapshots: snapshots.VirtualMachineSnapshot,
		Contents: contents.VirtualMachineSnapshotContent, VMs: vms.VirtualMachine}
	restores, err := virtualmachinerestore.NewStorage(Scheme, optsGetter, virtualmachinerestore.Dependencies{
		Authorizer: authz, Snapshots: snapshots.VirtualMachineSnapshot, VMs: vms.VirtualMachine, Snapshotted: &snapshotted})
	if err != nil {
		return nil, err
	}
	snapshotGroup := genericapiserver.NewDefaultAPIGroupInfo(snapshot.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	snapshotGroup.VersionedResourcesStorageMap[snapshotv1beta1.SchemeGroupVersion.Version] =
		serving.Storage(snapshots.Serving(), contents.Serving(), restores.Serving())
	if err := genericServer.InstallAPIGroup(&snapshotGroup); err != nil {
		return nil, err
	}

	// clone.kubevirt.io/v1beta1: clones, made by virt-controller's clone controller.
	clones, err := virtualmachineclone.NewStorage(Scheme, optsGetter, authz, &virtualmachineclone.Sources{VMs: vms.VirtualMachine, Snapshotted: snapshotted})
	if err != nil {
		return nil, err
	}
	cloneGroup := genericapiserver.NewDefaultAPIGroupInfo(clone.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	cloneGroup.VersionedResourcesStorageMap[clonev1beta1.SchemeGroupVersion.Version] = serving.Storage(clones.Serving())
	if err := genericServer.InstallAPIGroup(&cloneGroup); err != nil {
		return nil, err
	}

	// export.kubevirt.io/v1beta1: exports, served by virt-controller's export servers.
	exports, err := virtualmachineexport.NewStorage(Scheme, optsGetter, authz)
	if err != nil {
		return nil, err
	}
	exportGroup := genericapiserver.NewDefaultAPIGroupInfo(export.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	exportGroup.VersionedResourcesStorageMap[exportv1beta1.SchemeGroupVersion.Version] = serving.Storage(exports.Serving())
	if err := genericServer.InstallAPIGroup(&exportGroup); err != nil {
		return nil, err
	}
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
