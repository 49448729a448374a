package virtualmachineinstance

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/registry/cdi"
	"github.com/hangarvm/hangar/pkg/registry/serving"
	"github.com/hangarvm/hangar/pkg/registry/statusrest"
)

// Storage holds the REST endpoints of virtualmachineinstances and their subresources.
type Storage struct {
	VirtualMachineInstance *REST
	Status                 *statusrest.REST
	// Commands are pause, unpause, softreboot, freeze and unfreeze.
	Commands *Commands
	// Console and VNC are the streams; Screenshot one frame of the display.
	Console, VNC, Screenshot *StreamREST
	// GuestOSInfo, UserList and FileSystemList are what the guest agent reports.
	GuestOSInfo, UserList, FileSystemList *GuestAgentREST
	// PortForward forwards a connection to a port of the guest (ForVMs gives the VMs' own).
	PortForward *PortForwardREST
	// Volumes are addvolume and removevolume; nil serves neither (set by the server, which
	// holds the admission chain their writes run).
	Volumes *Volumes
}

// REST serves virtualmachineinstances.
type REST struct {
	*genericregistry.Store
	// cdi says whether the cluster serves DataVolumes (datavolumes.go); nil standalone.
	cdi cdi.Served
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get vmi` work.
func (*REST) ShortNames() []string { return []string{"vmi", "vmis"} }

// Categories puts VMIs in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of virtualmachineinstances and their subresources on the
// given etcd-backed options. nodes reaches the node agents for guest commands and streams
// (nil when there are none); addresses finds the launcher pods' IPs for port-forwards (nil
// without a cluster); authz authorizes the streams' second check; streams bounds the
// streams open at once; served says whether the cluster serves CDI (nil without a cluster).
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, nodes Nodes, addresses LauncherAddresses, authz authorizer.Authorizer, streams *StreamLimits, served cdi.Served) (*Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &kubevirt.VirtualMachineInstance{} },
		NewListFunc:               func() runtime.Object { return &kubevirt.VirtualMachineInstanceList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  kubevirt.Resource("virtualmachineinstances"),
		SingularQualifiedResource: kubevirt.Resource("virtualmachineinstance"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{
		RESTOptions: optsGetter,
		AttrFunc:    GetAttrs,
		TriggerFunc: map[string]storage.IndexerFunc{NodeNameField: NodeNameTriggerFunc},
	}); err != nil {
		return nil, err
	}

	vmis := &REST{Store: store, cdi: served}
	return &Storage{
		VirtualMachineInstance: vmis,
		Status:                 statusrest.New(store, NewStatusStrategy(strategy)),
		Commands:               NewCommands(vmis, nodes),
		Console:                NewStreamREST(vmis, nodes, authz, "console", streams),
		VNC:                    NewStreamREST(vmis, nodes, authz, "vnc", streams),
		Screenshot:             NewScreenshotREST(vmis, nodes, authz, streams),
		GuestOSInfo:            NewGuestAgentREST(vmis, nodes, "guestosinfo"),
		UserList:               NewGuestAgentREST(vmis, nodes, "userlist"),
		FileSystemList:         NewGuestAgentREST(vmis, nodes, "filesystemlist"),
		PortForward:            NewPortForwardREST(vmis, nodes, addresses, authz, streams),
	}, nil
}

// Serving lists what virtualmachineinstances serve in both groups. Freezing and the guest
// agent's reports are KubeVirt's subresources.kubevirt.io routes only.
func (s *Storage) Serving() serving.Resource {
	c := s.Commands
	// KubeVirt's softreboot takes no body; the kubevirt.io one takes a dry run as pause does.
	softReboot := serving.Action("softreboot", "v1SoftReboot", c.SoftReboot, v1.SoftRebootOptions{}, "ask the guest to reboot (ACPI)")
	softReboot.Subresources.Options = nil
	r := serving.Resource{Name: "virtualmachineinstances", Kind: "VirtualMachineInstance", Storage: s.VirtualMachineInstance, Subresources: []serving.Subresource{
		{Name: "status", KubeVirt: s.Status},
		serving.Action("pause", "v1Pause", c.Pause, v1.PauseOptions{}, "pause a running instance"),
		serving.Action("unpause", "v1Unpause", c.Unpause, v1.UnpauseOptions{}, "unpause a paused instance"),
		softReboot,
		serving.Action("reset", "v1Reset", c.Reset, nil, "reset the guest at once (a hard reset, as the reset button)"),
		{Name: "freeze", Subresources: &serving.Route{Doc: "freeze the guest's file systems through the guest agent",
			Operation: "v1Freeze", Action: c.Freeze, Options: v1.FreezeUnfreezeTimeout{}}},
		{Name: "unfreeze", Subresources: &serving.Route{Doc: "thaw the guest's file systems", Operation: "v1Unfreeze", Action: c.Unfreeze}},
		serving.Websocket("console", "v1Console", s.Console, "the serial console, as a websocket"),
		serving.Websocket("vnc", "v1VNC", s.VNC, "the VNC display, as a websocket"),
		{Name: "vnc/screenshot", Subresources: &serving.Route{Doc: "one frame of the VNC display, as a PNG",
			Operation: "v1VNCScreenshot", Stream: s.Screenshot, ContentType: "image/png"}},
		{Name: "guestosinfo", Subresources: &serving.Route{Doc: "what the guest agent reports of its guest",
			Operation: "v1Guestosinfo", Stream: s.GuestOSInfo, Returns: v1.VirtualMachineInstanceGuestAgentInfo{}}},
		{Name: "userlist", Subresources: &serving.Route{Doc: "the users logged in to the guest, as its agent reports them",
			Operation: "v1Userlist", Stream: s.UserList, Returns: v1.VirtualMachineInstanceGuestOSUserList{}}},
		{Name: "filesystemlist", Subresources: &serving.Route{Doc: "the guest's file systems, as its agent reports them",
			Operation: "v1Filesystemlist", Stream: s.FileSystemList, Returns: v1.VirtualMachineInstanceFileSystemList{}}},
		{Name: "portforward", Subresources: &serving.Route{Doc: PortForwardDoc, Stream: s.PortForward, Websocket: true, Below: PortForwardPaths("vmi")}},
	}}
	if v := s.Volumes; v != nil {
		r.Subresources = append(r.Subresources,
			serving.Action("addvolume", "v1vmi-addvolume", v.Add, v1.AddVolumeOptions{}, "hotplug a claim or DataVolume into the running guest"),
			serving.Action("removevolume", "v1vmi-removevolume", v.Remove, v1.RemoveVolumeOptions{}, "take a hotplugged volume out of the running guest"))
	}
	return r
}
