package virtctl

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// createVMOptions are the flags of KubeVirt's `virtctl create vm` that Hangar's API can
// express. Left out until it can: --volume-sysprep and --access-cred
// (spec.template.spec.accessCredentials).
type createVMOptions struct {
	name, runStrategy, memory, instancetype, preference string
	terminationGracePeriod                              int64
	containerDisks, pvcs                                []string
	dataSources, clonePVCs, blanks, imports             []string
	cloudInit                                           cloudInitOptions
	infer                                               inferOptions
}

// The kinds --instancetype and --preference take before a slash, as KubeVirt spells them (in
// any case); without one the VM names the cluster-wide kind, as both servers default it.
var (
	instancetypeKinds = []string{"virtualmachineinstancetype", "virtualmachineclusterinstancetype"}
	preferenceKinds   = []string{"virtualmachinepreference", "virtualmachineclusterpreference"}
)

var runStrategies = []v1.VirtualMachineRunStrategy{
	v1.RunStrategyAlways, v1.RunStrategyManual, v1.RunStrategyHalted, v1.RunStrategyOnce, v1.RunStrategyRerunOnFailure,
}

func newCreateVMCommand(c *cliContext) *cobra.Command {
	o := createVMOptions{runStrategy: string(v1.RunStrategyAlways), terminationGracePeriod: 180, memory: "512Mi",
		cloudInit: cloudInitOptions{dataSource: cloudInitNoCloud}, infer: inferOptions{instancetype: true, preference: true}}
	cmd := &cobra.Command{
		Use:   "vm",
		Short: "Print a VirtualMachine manifest",
		Long: "Print a VirtualMachine manifest, as KubeVirt's virtctl create vm does.\n\n" +
			"Volumes come in the order containerdisk, pvc, the DataVolume flags, cloud-init, each flag's\n" +
			"in the order given, which is the boot order unless bootorder params say otherwise: a volume\n" +
			"with one gets a disk with that boot order.\n\n" +
			"Unless --instancetype, --preference or --memory says otherwise, the VM infers its instance type\n" +
			"and preference from its boot volume (the lowest boot order, else the first volume) when that is\n" +
			"a PVC, or a DataVolume from a DataSource, a PVC, a snapshot or a registry image: from the\n" +
			"instancetype.kubevirt.io/default-instancetype and default-preference labels of the claim, or\n" +
			"of the DataSource (else its claim), or goes on without them (inferFromVolumeFailurePolicy:\n" +
			"Ignore, keeping --memory).\n" +
			"--infer-instancetype and --infer-preference ask for it: a failure refuses the VM, and the\n" +
			"instance type gives the memory.",
		Example: `  # A VM of the u1.medium instance type and fedora preference, booting a container disk:
  virtctl create vm --name my-vm --instancetype u1.medium --preference fedora \
    --volume-containerdisk=src:quay.io/containerdisks/fedora:latest | kubectl apply -f -

  # 1Gi of memory, a container disk and a PVC that boots first, a user with an SSH key (cloud-init):
  virtctl create vm --memory=1Gi --volume-containerdisk=src:my.registry/my-image:my-tag \
    --volume-pvc=src:my-pvc,bootorder:1 --user cloud-user --ssh-key="ssh-ed25519 AAAA..."

  # A namespaced instance type (VirtualMachineInstancetype), of the VM's namespace:
  virtctl create vm --instancetype=virtualmachineinstancetype/my-instancetype

  # Instance type and preference from the labels of a PVC the VM boots from, or refused:
  virtctl create vm --volume-pvc=src:my-annotated-pvc --infer-instancetype --infer-preference

  # The same from the DataSource a DataVolume is made from (its labels, else its claim's):
  virtctl create vm --volume-datasource=src:os-images/fedora --infer-instancetype --infer-preference

  # Each from a volume of its own:
  virtctl create vm --volume-pvc=src:pvc-a --volume-pvc=src:pvc-b \
    --infer-instancetype-from=pvc-a --infer-preference-from=pvc-b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vm, err := o.virtualMachine(cmd.Flags(), c.explicitNamespace(), c.streams.ErrOut)
			if err != nil {
				return err
			}
			return printManifest(c.streams.Out, vm)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.name, "name", "", "name of the VM; vm-<random> when empty")
	f.StringVar(&o.runStrategy, "run-strategy", o.runStrategy, "Always, Manual, Halted, Once or RerunOnFailure")
	f.Int64Var(&o.terminationGracePeriod, "termination-grace-period", o.terminationGracePeriod, "seconds the guest gets to shut down")
	f.StringVar(&o.memory, "memory", o.memory, "the guest's memory (domain.memory.guest); not with --instancetype, which gives it")
	f.StringVar(&o.instancetype, "instancetype", "", "[KIND/]NAME of the instance type; KIND virtualmachineinstancetype (the VM's namespace)\nor virtualmachineclusterinstancetype, the default")
	f.StringVar(&o.preference, "preference", "", "[KIND/]NAME of the preference; KIND virtualmachinepreference (the VM's namespace)\nor virtualmachineclusterpreference, the default")
	o.infer.addFlags(cmd)
	f.StringArrayVar(&o.containerDisks, "volume-containerdisk", nil, "a container disk volume, src:IMAGE[,name:NAME][,bootorder:N]; may be repeated")
	f.StringArrayVar(&o.pvcs, "volume-pvc", nil, "a PersistentVolumeClaim volume, src:CLAIM[,name:NAME][,bootorder:N]; may be repeated")
	f.StringArrayVar(&o.dataSources, "volume-datasource", nil, "a DataVolume template from a DataSource, and its volume,\nsrc:[NAMESPACE/]NAME[,name:NAME][,size:SIZE][,storageclass:CLASS][,bootorder:N]; may be repeated")
	f.StringArrayVar(&o.clonePVCs, "volume-clone-pvc", nil, "a DataVolume template cloning a claim, and its volume,\nsrc:NAMESPACE/NAME[,name:NAME][,size:SIZE][,storageclass:CLASS][,bootorder:N]; may be repeated")
	f.StringArrayVar(&o.blanks, "volume-blank", nil, "a blank DataVolume template, and its volume, size:SIZE[,name:NAME][,storageclass:CLASS][,bootorder:N]; may be repeated")
	f.StringArrayVar(&o.imports, "volume-import", nil, "a DataVolume template, and its volume, type:ds|pvc|snapshot|blank|http|registry|s3|gcs,\nsrc:[NAMESPACE/]NAME (ds, pvc, snapshot) or url:URL[,size:SIZE][,name:NAME][,storageclass:CLASS][,bootorder:N]; may be repeated")
	o.cloudInit.addFlags(cmd)
	fixedCompletions(cmd, "run-strategy", "Always", "Manual", "Halted", "Once", "RerunOnFailure")
	return cmd
}

// virtualMachine builds the VM the flags describe; flags says which were given, warnings takes
// what the user should know but is no error.
func (o *createVMOptions) virtualMachine(flags *pflag.FlagSet, namespace string, warnings io.Writer) (*v1.VirtualMachine, error) {
	name := o.name
	if name == "" {
		name = "vm-" + rand.String(5)
	}
	// A VM's name becomes its guest's host name and a pod label: a DNS label, as virt-api wants.
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return nil, flagError("name", name, "%s", strings.Join(errs, "; "))
	}
	strategy, err := parseRunStrategy(o.runStrategy)
	if err != nil {
		return nil, err
	}
	grace := o.terminationGracePeriod
	if grace < 0 {
		return nil, flagError("termination-grace-period", fmt.Sprint(grace), "must not be negative")
	}
	vm := &v1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.VirtualMachineSpec{
			RunStrategy: &strategy,
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{
				TerminationGracePeriodSeconds: &grace,
			}},
		},
	}
	if flags.Changed("instancetype") {
		kind, name, err := parseMatcher("instancetype", o.instancetype, instancetypeKinds)
		if err != nil {
			return nil, err
		}
		vm.Spec.Instancetype = &v1.InstancetypeMatcher{Kind: kind, Name: name}
	} else {
		// The memory KubeVirt gives a VM without an instance type: the template may not set
		// what an instance type gives.
		memory, err := apiresource.ParseQuantity(o.memory)
		if err != nil || memory.Sign() <= 0 {
			return nil, flagError("memory", o.memory, "want a positive quantity such as 512Mi or 2Gi")
		}
		vm.Spec.Template.Spec.Domain.Memory = &v1.Memory{Guest: &memory}
	}
	if flags.Changed("preference") {
		kind, name, err := parseMatcher("preference", o.preference, preferenceKinds)
		if err != nil {
			return nil, err
		}
		vm.Spec.Preference = &v1.PreferenceMatcher{Kind: kind, Name: name}
	}

	b := vmVolumes{vm: vm, bootOrders: map[uint]string{}}
	for i, value := range o.containerDisks {
		if err := b.addContainerDisk(value, i); err != nil {
			return nil, err
		}
	}
	for _, value := range o.pvcs {
		if err := b.addPVC(value); err != nil {
			return nil, err
		}
	}
	// DataVolumes (CDI's, which the cluster must serve), in KubeVirt's order of flags.
	for _, value := range o.dataSources {
		if err := b.addDataVolumeSource(value); err != nil {
			return nil, err
		}
	}
	for _, value := range o.clonePVCs {
		if err := b.addClonePVC(value); err != nil {
			return nil, err
		}
	}
	for i, value := range o.blanks {
		if err := b.addBlank(value, i); err != nil {
			return nil, err
		}
	}
	for _, value := range o.imports {
		if err := b.addImport(value); err != nil {
			return nil, err
		}
	}
	vol, err := o.cloudInit.volume(flags, warnings)
	if err != nil {
		return nil, err
	}
	if vol != nil {
		// The cloud-init volume comes last, as in KubeVirt's.
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.Name == vol.Name {
				return nil, fmt.Errorf("the cloud-init volume is named %s, and so is a --volume-containerdisk or --volume-pvc volume: give that one another name", vol.Name)
			}
		}
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, *vol)
	}
	// Last, as in KubeVirt's: the volumes and their boot orders are known.
	if err := o.infer.apply(flags, vm, b.bootOrders); err != nil {
		return nil, err
	}
	return vm, nil
}

func parseRunStrategy(s string) (v1.VirtualMachineRunStrategy, error) {
	var names []string
	for _, rs := range runStrategies {
		if strings.EqualFold(s, string(rs)) {
			return rs, nil
		}
		names = append(names, string(rs))
	}
	return "", flagError("run-strategy", s, "want one of %s", strings.Join(names, ", "))
}

// parseMatcher parses [KIND/]NAME of --instancetype or --preference. The kind is written as
// KubeVirt writes it, lower-cased; both servers read every spelling.
func parseMatcher(flag, value string, kinds []string) (kind, name string, err error) {
	kind, name, err = splitPrefixed(value)
	if err != nil {
		return "", "", flagError(flag, value, "%v", err)
	}
	kind = strings.ToLower(kind)
	if kind != "" && kind != kinds[0] && kind != kinds[1] {
		return "", "", flagError(flag, value, "unknown kind %q, want %s or %s", kind, kinds[0], kinds[1])
	}
	return kind, name, nil
}

// vmVolumes adds the flags' volumes to a VM, and a disk for each volume given a boot order
// (Hangar's defaults attach the others as virtio disks, as KubeVirt's do).
type vmVolumes struct {
	vm         *v1.VirtualMachine
	bootOrders map[uint]string // boot order → volume
}

func (b *vmVolumes) addContainerDisk(value string, index int) error {
	p, err := parseParams("volume-containerdisk", value, "src", "name", "bootorder")
	if err != nil {
		return err
	}
	image, err := p.required("src")
	if err != nil {
		return err
	}
	name := p.values["name"]
	if name == "" {
		name = fmt.Sprintf("%s-containerdisk-%d", b.vm.Name, index)
	}
	// Its init container is named after it, and a container name is a DNS label.
	if len(name) > layout.MaxContainerDiskVolumeName {
		return p.errorf("the volume name %s is longer than %d characters: give a shorter one (name:...)", name, layout.MaxContainerDiskVolumeName)
	}
	order, err := p.bootOrder()
	if err != nil {
		return err
	}
	return b.add(p, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: image}}}, order)
}

func (b *vmVolumes) addPVC(value string) error {
	p, err := parseParams("volume-pvc", value, "src", "name", "bootorder")
	if err != nil {
		return err
	}
	src, err := p.required("src")
	if err != nil {
		return err
	}
	namespace, claim, err := splitPrefixed(src)
	switch {
	case err != nil:
		return p.errorf("src: %v", err)
	case namespace != "":
		return p.errorf("src: a VM's claims are in its own namespace; name the claim without %s/", namespace)
	}
	name := p.values["name"]
	if name == "" {
		name = claim
	}
	// A block claim becomes a device of the volume's name in the launcher's /dev.
	if layout.ShadowsContainerDevice(name) {
		return p.errorf("the volume name %s is a device the launcher container needs: give another (name:...)", name)
	}
	order, err := p.bootOrder()
	if err != nil {
		return err
	}
	return b.add(p, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}}, order)
}

// add adds a volume whose flag is p, with a disk when it has a boot order.
func (b *vmVolumes) add(p params, vol v1.Volume, order *uint) error {
	spec := &b.vm.Spec.Template.Spec
	if errs := validation.IsDNS1123Label(vol.Name); len(errs) > 0 {
		return p.errorf("the volume name %s: %s", vol.Name, strings.Join(errs, "; "))
	}
	if layout.IsReservedPodVolume(vol.Name) {
		return p.errorf("the volume name %s is one of the launcher pod's own volumes: give another (name:...)", vol.Name)
	}
	for _, v := range spec.Volumes {
		if v.Name == vol.Name {
			return p.errorf("there is a volume named %s already", vol.Name)
		}
	}
	if order != nil {
		if other, taken := b.bootOrders[*order]; taken {
			return p.errorf("bootorder %d is volume %s's already", *order, other)
		}
		b.bootOrders[*order] = vol.Name
		spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, v1.Disk{Name: vol.Name, BootOrder: order})
	}
	spec.Volumes = append(spec.Volumes, vol)
	return nil
}
