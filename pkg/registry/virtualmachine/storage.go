package virtualmachine

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/registry/action"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
	"github.com/hangarvm/hangar/pkg/registry/virtualmachineinstance"
)

// Storage holds the REST endpoints of virtualmachines and their subresources.
type Storage struct {
	VirtualMachine *REST
	Status         *statusrest.REST
	// Actions are start, stop, restart and migrate.
	Actions *Actions
	// ExpandSpec is the VM as its instance will be made; ExpandVMSpec the same for a VM sent
	// in the body (the namespace's expand-vm-spec).
	ExpandSpec   *ExpandSpecREST
	ExpandVMSpec *ExpandVMSpec
	// PortForward forwards a connection to a port of the VM's instance (the instances'
	// stream on the VM's name); nil when not served.
	PortForward rest.Connecter
}

// Dependencies are what virtualmachines need beside their own storage.
type Dependencies struct {
	// VMIs reads the instances of VMs (the actions).
	VMIs rest.Getter
	// Migrations is where the migrate action creates migrations; without it, migrate
	// answers 503.
	Migrations rest.Creater
	// LauncherPods deletes the launcher pods of a forced restart; nil without a cluster.
	LauncherPods LauncherPods
	// Starts refuses the start of a VM whose launcher pod the cluster would refuse; nil when
	// the checks are off. The admission plugin checks only the updates that switch a VM on
	// (the spec), not the start requests a start queues in the status.
	Starts StartChecker
	// Authorizer answers whether a user may create the state claim a VM asks for; nil
	// standalone.
	Authorizer authorizer.Authorizer
	// ClaimExists finds a state claim made already; nil standalone.
	ClaimExists ClaimExists
	// DataVolumes says whether the cluster serves CDI and which DataVolumes exist; nil
	// standalone, where VMs using DataVolumes are refused.
	DataVolumes DataVolumeLookup
	// Claims reads the claims VMs infer their instance type and preference from (infer.go),
	// once the requesting user is authorized; nil standalone.
	Claims ClaimGetter
	// VolumeSources reads the DataVolumes, DataSources and VolumeSnapshots VMs infer from, as
	// Claims does claims; nil standalone.
	VolumeSources VolumeSourceGetter
	// Admission runs the server's admission chain on the actions' writes; nil standalone.
	Admission *action.Admission
	// InstanceVolumes hotplug volumes into instances: addvolume and removevolume of a running
	// VM's instance (volumes.go); nil serves neither.
	InstanceVolumes *virtualmachineinstance.Volumes
	// Instancetypes reads the instance types and preferences VMs name.
	Instancetypes *Instancetypes
	// Decoder decodes a VM sent to expand-vm-spec to the internal version, defaulted.
	Decoder runtime.Decoder
}

// REST serves virtualmachines.
type REST struct {
	*genericregistry.Store
	// authorizer answers whether a user may create the state claim a VM asks for
	// (stateclaim.go); nil standalone.
	authorizer authorizer.Authorizer
	// claimExists finds a state claim made already (stateclaim.go); nil standalone.
	claimExists ClaimExists
	// dataVolumes is what virt-api knows of CDI (datavolumes.go); nil standalone.
	dataVolumes DataVolumeLookup
	// claims and volumeSources read what VMs infer from (infer.go); nil standalone.
	claims        ClaimGetter
	volumeSources VolumeSourceGetter
	// expander defaults the template of a VM the Ignore policy left without matchers.
	expander *expander
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get vm` work.
func (*REST) ShortNames() []string { return []string{"vm", "vms"} }

// Categories puts VMs in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of virtualmachines and their subresources on the given
// etcd-backed options.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, deps Dependencies) (*Storage, error) {
	strategy := NewStrategy(scheme, deps.Instancetypes)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &kubevirt.VirtualMachine{} },
		NewListFunc:               func() runtime.Object { return &kubevirt.VirtualMachineList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  kubevirt.Resource("virtualmachines"),
		SingularQualifiedResource: kubevirt.Resource("virtualmachine"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}

	vms := &REST{Store: store, authorizer: deps.Authorizer, claimExists: deps.ClaimExists, dataVolumes: deps.DataVolumes, claims: deps.Claims,
		volumeSources: deps.VolumeSources, expander: strategy.expander}
	status := statusrest.New(store, NewStatusStrategy(strategy))
	return &Storage{
		VirtualMachine: vms,
		Status:         status,
		Actions: &Actions{vms: vms, vmStatus: status, vmis: deps.VMIs, pods: deps.LauncherPods,
			starts: deps.Starts, migrations: deps.Migrations, admission: deps.Admission, instanceVolumes: deps.InstanceVolumes},
		ExpandSpec:   &ExpandSpecREST{vms: vms, expander: strategy.expander},
		ExpandVMSpec: &ExpandVMSpec{expander: strategy.expander, decoder: deps.Decoder, infer: vms.inferMatchers},
	}, nil
}

// Serving lists what virtualmachines serve in both groups.
func (s *Storage) Serving() serving.Resource {
	r := serving.Resource{Name: "virtualmachines", Kind: "VirtualMachine", Storage: s.VirtualMachine, Subresources: []serving.Subresource{
		{Name: "status", KubeVirt: s.Status},
		serving.Action("start", "v1Start", s.Actions.Start, v1.StartOptions{}, "start a VirtualMachine"),
		serving.Action("stop", "v1Stop", s.Actions.Stop, v1.StopOptions{}, "stop a VirtualMachine"),
		serving.Action("restart", "v1Restart", s.Actions.Restart, v1.RestartOptions{}, "restart a VirtualMachine"),
		serving.Action("migrate", "v1Migrate", s.Actions.Migrate, v1.MigrateOptions{}, "live migrate the VirtualMachine's instance to another node"),
		{Name: "expand-spec", KubeVirt: s.ExpandSpec, Subresources: &serving.Route{
			Doc:       "the VirtualMachine as its instance will be made: the template expanded with its instance type and preference",
			Operation: "v1vm-ExpandSpec", Stream: s.ExpandSpec, Returns: v1.VirtualMachine{}}},
		{Name: "portforward", Subresources: s.portForward()},
	}}
	if s.Actions.instanceVolumes != nil {
		r.Subresources = append(r.Subresources,
			serving.Action("addvolume", "v1vm-addvolume", s.Actions.AddVolume, v1.AddVolumeOptions{}, "add a volume to the VirtualMachine's template, and hotplug it into its running instance"),
			serving.Action("removevolume", "v1vm-removevolume", s.Actions.RemoveVolume, v1.RemoveVolumeOptions{}, "remove a hotplugged volume from the VirtualMachine's template and its running instance"),
			serving.Action("memorydump", "v1MemoryDump", s.Actions.MemoryDump, v1.VirtualMachineMemoryDumpRequest{}, "dump the memory of the VirtualMachine's running guest to a claim"),
			serving.Action("removememorydump", "v1RemoveMemoryDump", s.Actions.RemoveMemoryDump, nil, "dissociate the memory dump claim from the VirtualMachine"))
	}
	return r
}

// portForward is the portforward route, with the instances' paths and documentation.
func (s *Storage) portForward() *serving.Route {
	if s.PortForward == nil {
		return nil
	}
	return &serving.Route{Doc: virtualmachineinstance.PortForwardDoc, Stream: s.PortForward, Websocket: true,
		Below: virtualmachineinstance.PortForwardPaths("vm")}
}
