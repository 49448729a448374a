package virtctl

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
)

// `virtctl create instancetype` and `virtctl create preference`, with KubeVirt's flags: a
// cluster-wide object unless --namespaced or -n asks for one of a namespace.

// scopedName is the kind and the name of a created object: namespaced with --namespaced or
// -n, cluster-wide otherwise, named PREFIX-<random> without --name, as KubeVirt's virtctl has
// them.
func scopedName(name string, namespaced bool, kind, clusterKind, prefix, clusterPrefix string) (string, string, error) {
	if !namespaced {
		kind, prefix = clusterKind, clusterPrefix
	}
	if name == "" {
		name = prefix + "-" + rand.String(5)
	}
	// Names are DNS subdomains, as virt-api takes them: u1.medium has a dot.
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", "", flagError("name", name, "%s", strings.Join(errs, "; "))
	}
	return kind, name, nil
}

type createInstancetypeOptions struct {
	name, memory, ioThreadsPolicy string
	cpu                           uint32
	namespaced                    bool
	gpus, hostDevices             []string
}

func newCreateInstancetypeCommand(c *cliContext) *cobra.Command {
	var o createInstancetypeOptions
	cmd := &cobra.Command{
		Use:   "instancetype --cpu N --memory QUANTITY",
		Short: "Print a VirtualMachineClusterInstancetype or VirtualMachineInstancetype manifest",
		Example: `  virtctl create instancetype --name my-instancetype --cpu 2 --memory 256Mi | kubectl apply -f -
  virtctl create instancetype --namespaced --cpu 2 --memory 256Mi   # a VirtualMachineInstancetype`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			it, err := o.instancetype(c.explicitNamespace())
			if err != nil {
				return err
			}
			return printManifest(c.streams.Out, it)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "name of the instance type; [cluster]instancetype-<random> when empty")
	f.Uint32Var(&o.cpu, "cpu", 0, "the guest's vCPUs (required)")
	f.StringVar(&o.memory, "memory", "", "the guest's memory (required)")
	f.StringArrayVar(&o.gpus, "gpu", nil, "a GPU, name:NAME,devicename:RESOURCE; may be repeated. Hangar refuses VMs that use it")
	f.StringArrayVar(&o.hostDevices, "hostdevice", nil, "a host device, name:NAME,devicename:RESOURCE; may be repeated. Hangar refuses VMs that use it")
	f.StringVar(&o.ioThreadsPolicy, "iothreadspolicy", "", "auto or shared. Hangar refuses VMs that use it")
	f.BoolVar(&o.namespaced, "namespaced", false, "a VirtualMachineInstancetype (of a namespace), not a VirtualMachineClusterInstancetype")
	_ = cmd.MarkFlagRequired("cpu")
	_ = cmd.MarkFlagRequired("memory")
	fixedCompletions(cmd, "iothreadspolicy", string(instancetypev1beta1.IOThreadsPolicyAuto), string(instancetypev1beta1.IOThreadsPolicyShared))
	return cmd
}

// instancetype is the instance type the flags describe: the cluster-wide kind unless
// --namespaced or a namespace is given.
func (o *createInstancetypeOptions) instancetype(namespace string) (any, error) {
	if o.cpu == 0 {
		return nil, flagError("cpu", "0", "an instance type gives at least one vCPU")
	}
	memory, err := apiresource.ParseQuantity(o.memory)
	if err != nil || memory.Sign() <= 0 {
		return nil, flagError("memory", o.memory, "want a positive quantity such as 256Mi or 2Gi")
	}
	spec := instancetypev1beta1.VirtualMachineInstancetypeSpec{
		CPU:    instancetypev1beta1.CPUInstancetype{Guest: o.cpu},
		Memory: instancetypev1beta1.MemoryInstancetype{Guest: memory},
	}
	for _, value := range o.gpus {
		name, device, err := namedDevice("gpu", value)
		if err != nil {
			return nil, err
		}
		spec.Gpus = append(spec.Gpus, instancetypev1beta1.GPU{Name: name, DeviceName: device})
	}
	for _, value := range o.hostDevices {
		name, device, err := namedDevice("hostdevice", value)
		if err != nil {
			return nil, err
		}
		spec.HostDevices = append(spec.HostDevices, instancetypev1beta1.HostDevice{Name: name, DeviceName: device})
	}
	if o.ioThreadsPolicy != "" {
		policy := instancetypev1beta1.IOThreadsPolicy(o.ioThreadsPolicy)
		if policy != instancetypev1beta1.IOThreadsPolicyAuto && policy != instancetypev1beta1.IOThreadsPolicyShared {
			return nil, flagError("iothreadspolicy", o.ioThreadsPolicy, "want auto or shared")
		}
		spec.IOThreadsPolicy = &policy
	}

	kind, name, err := scopedName(o.name, o.namespaced || namespace != "",
		"VirtualMachineInstancetype", "VirtualMachineClusterInstancetype", "instancetype", "clusterinstancetype")
	if err != nil {
		return nil, err
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	typeMeta := metav1.TypeMeta{APIVersion: instancetypev1beta1.SchemeGroupVersion.String(), Kind: kind}
	if kind == "VirtualMachineClusterInstancetype" {
		return &instancetypev1beta1.VirtualMachineClusterInstancetype{TypeMeta: typeMeta, ObjectMeta: meta, Spec: spec}, nil
	}
	return &instancetypev1beta1.VirtualMachineInstancetype{TypeMeta: typeMeta, ObjectMeta: meta, Spec: spec}, nil
}

// namedDevice parses --gpu and --hostdevice: name:NAME,devicename:RESOURCE, both required.
func namedDevice(flag, value string) (name, device string, err error) {
	p, err := parseParams(flag, value, "name", "devicename")
	if err != nil {
		return "", "", err
	}
	if name, err = p.required("name"); err != nil {
		return "", "", err
	}
	device, err = p.required("devicename")
	return name, device, err
}

type createPreferenceOptions struct {
	name, cpuTopology, machineType, storageClass string
	namespaced                                   bool
}

// preferredTopologies are the values of --cpu-topology, the old prefer* names included, as
// KubeVirt takes them.
var preferredTopologies = []instancetypev1beta1.PreferredCPUTopology{
	instancetypev1beta1.Sockets, instancetypev1beta1.Cores, instancetypev1beta1.Threads, instancetypev1beta1.Spread,
	instancetypev1beta1.Any, instancetypev1beta1.DeprecatedPreferSockets, instancetypev1beta1.DeprecatedPreferCores,
	instancetypev1beta1.DeprecatedPreferThreads, instancetypev1beta1.DeprecatedPreferSpread, instancetypev1beta1.DeprecatedPreferAny,
}

func newCreatePreferenceCommand(c *cliContext) *cobra.Command {
	var o createPreferenceOptions
	cmd := &cobra.Command{
		Use:   "preference",
		Short: "Print a VirtualMachineClusterPreference or VirtualMachinePreference manifest",
		Example: `  virtctl create preference --cpu-topology sockets
  virtctl create preference --volume-storage-class local-path --namespaced | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pref, err := o.preference(cmd.Flags(), c.explicitNamespace())
			if err != nil {
				return err
			}
			return printManifest(c.streams.Out, pref)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "name of the preference; [cluster]preference-<random> when empty")
	f.BoolVar(&o.namespaced, "namespaced", false, "a VirtualMachinePreference (of a namespace), not a VirtualMachineClusterPreference")
	f.StringVar(&o.storageClass, "volume-storage-class", "", "the preferred storage class of the VM's DataVolume templates")
	f.StringVar(&o.machineType, "machine-type", "", "the preferred machine type, such as q35")
	f.StringVar(&o.cpuTopology, "cpu-topology", "", "how the vCPUs are shown to the guest: sockets, cores, threads, spread or any")
	fixedCompletions(cmd, "cpu-topology", topologyNames(preferredTopologies[:5])...)
	return cmd
}

// preference is the preference the flags describe; a flag given empty sets its field empty,
// as KubeVirt's virtctl does.
func (o *createPreferenceOptions) preference(flags *pflag.FlagSet, namespace string) (any, error) {
	var spec instancetypev1beta1.VirtualMachinePreferenceSpec
	if flags.Changed("cpu-topology") {
		topology := instancetypev1beta1.PreferredCPUTopology(o.cpuTopology)
		if !slices.Contains(preferredTopologies, topology) {
			return nil, flagError("cpu-topology", o.cpuTopology, "want one of %s", strings.Join(topologyNames(preferredTopologies), ", "))
		}
		spec.CPU = &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &topology}
	}
	if flags.Changed("machine-type") {
		spec.Machine = &instancetypev1beta1.MachinePreferences{PreferredMachineType: o.machineType}
	}
	if flags.Changed("volume-storage-class") {
		spec.Volumes = &instancetypev1beta1.VolumePreferences{PreferredStorageClassName: o.storageClass}
	}

	kind, name, err := scopedName(o.name, o.namespaced || namespace != "",
		"VirtualMachinePreference", "VirtualMachineClusterPreference", "preference", "clusterpreference")
	if err != nil {
		return nil, err
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	typeMeta := metav1.TypeMeta{APIVersion: instancetypev1beta1.SchemeGroupVersion.String(), Kind: kind}
	if kind == "VirtualMachineClusterPreference" {
		return &instancetypev1beta1.VirtualMachineClusterPreference{TypeMeta: typeMeta, ObjectMeta: meta, Spec: spec}, nil
	}
	return &instancetypev1beta1.VirtualMachinePreference{TypeMeta: typeMeta, ObjectMeta: meta, Spec: spec}, nil
}

func topologyNames(topologies []instancetypev1beta1.PreferredCPUTopology) []string {
	var names []string
	for _, t := range topologies {
		names = append(names, string(t))
	}
	return names
}
