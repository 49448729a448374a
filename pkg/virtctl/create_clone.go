package virtctl

import (
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	clonev1beta1 "github.com/hangarvm/hangar/pkg/apis/clone/v1beta1"
)

// createCloneOptions are the flags of KubeVirt's `virtctl create clone`.
type createCloneOptions struct {
	name, sourceName, targetName, sourceType, targetType, newSMBiosSerial string
	labelFilters, annotationFilters, templateLabelFilters                 []string
	templateAnnotationFilters, newMACs                                    []string
}

// The spellings of --source-type and --target-type KubeVirt takes.
var (
	vmTypes       = []string{"vm", "VM", "VirtualMachine", "virtualmachine"}
	snapshotTypes = []string{"snapshot", "VirtualMachineSnapshot", "vmsnapshot", "VMSnapshot"}
)

func newCreateCloneCommand(c *cliContext) *cobra.Command {
	o := createCloneOptions{}
	cmd := &cobra.Command{
		Use:   "clone",
		Short: "Print a VirtualMachineClone manifest",
		Long: "Print a VirtualMachineClone manifest, as KubeVirt's virtctl create clone does: a new VM from a VM\n" +
			"or from a VirtualMachineSnapshot, with new MAC addresses and firmware UUID, the labels and\n" +
			"annotations the filters keep (\"*\" all, \"prefix*\", \"!\" to leave out).",
		Example: `  # A clone of the VM db into db-copy:
  virtctl create clone --source-name db --target-name db-copy | kubectl create -f -

  # Of a snapshot, the target named by virt-api (clone-<source>-<random>):
  virtctl create clone --source-name before-upgrade --source-type snapshot

  # Every label but team/*, a given MAC for the interface default, a new SMBIOS serial:
  virtctl create clone --source-name db --label-filter '*' --label-filter '!team/*' \
    --new-mac-address default:02:00:00:00:aa:01 --new-smbios-serial db-copy-serial`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vmClone, err := o.clone(c.explicitNamespace())
			if err != nil {
				return err
			}
			return printManifest(c.streams.Out, vmClone)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.name, "name", "", "name of the clone; clone-<random> when empty")
	f.StringVar(&o.sourceName, "source-name", "", "name of the VM or snapshot to clone (required)")
	f.StringVar(&o.targetName, "target-name", "", "name of the new VM; named by virt-api (clone-<source>-<random>) when empty")
	f.StringVar(&o.sourceType, "source-type", "vm", "vm or snapshot (KubeVirt's spellings: VirtualMachine, vmsnapshot, ...)")
	f.StringVar(&o.targetType, "target-type", "vm", "vm, the only kind of target")
	f.StringArrayVar(&o.labelFilters, "label-filter", nil, "a filter of the VM's labels the target keeps; may be repeated")
	f.StringArrayVar(&o.annotationFilters, "annotation-filter", nil, "a filter of the VM's annotations the target keeps; may be repeated")
	f.StringArrayVar(&o.templateLabelFilters, "template-label-filter", nil, "a filter of the VM template's labels; may be repeated")
	f.StringArrayVar(&o.templateAnnotationFilters, "template-annotation-filter", nil, "a filter of the VM template's annotations; may be repeated")
	f.StringArrayVar(&o.newMACs, "new-mac-address", nil, "INTERFACE:MAC, the target interface's MAC address; may be repeated")
	f.StringVar(&o.newSMBiosSerial, "new-smbios-serial", "", "the target's SMBIOS serial number")
	if err := cmd.MarkFlagRequired("source-name"); err != nil {
		panic(err)
	}
	fixedCompletions(cmd, "source-type", "vm", "snapshot")
	fixedCompletions(cmd, "target-type", "vm")
	return cmd
}

// clone builds the clone the flags describe.
func (o *createCloneOptions) clone(namespace string) (*clonev1beta1.VirtualMachineClone, error) {
	if o.sourceName == "" {
		return nil, flagError("source-name", o.sourceName, "must not be empty")
	}
	name := o.name
	if name == "" {
		name = "clone-" + rand.String(5)
	}
	vmClone := &clonev1beta1.VirtualMachineClone{
		TypeMeta:   metav1.TypeMeta{APIVersion: clonev1beta1.SchemeGroupVersion.String(), Kind: clonev1beta1.KindClone},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: clonev1beta1.VirtualMachineCloneSpec{
			LabelFilters: o.labelFilters, AnnotationFilters: o.annotationFilters,
			Template: clonev1beta1.CloneTemplateFilters{LabelFilters: o.templateLabelFilters, AnnotationFilters: o.templateAnnotationFilters},
		},
	}
	switch {
	case containsString(vmTypes, o.sourceType):
		vmClone.Spec.Source = &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: o.sourceName}
	case containsString(snapshotTypes, o.sourceType):
		vmClone.Spec.Source = &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: o.sourceName}
	default:
		return nil, flagError("source-type", o.sourceType, "supported types: vm, snapshot")
	}
	if !containsString(vmTypes, o.targetType) {
		return nil, flagError("target-type", o.targetType, "supported types: vm")
	}
	// As KubeVirt's, the target is written even without a name; virt-api names it.
	vmClone.Spec.Target = &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: o.targetName}
	for _, param := range o.newMACs {
		// KubeVirt's takes exactly one colon (so MACs written with dashes); Hangar splits at the
		// first, so a MAC written with colons works too.
		iface, mac, ok := strings.Cut(param, ":")
		switch {
		case !ok:
			return nil, flagError("new-mac-address", param, "want INTERFACE:MAC, for example default:02:00:00:00:aa:01")
		case iface == "":
			return nil, flagError("new-mac-address", param, "the interface name is empty")
		case mac == "":
			return nil, flagError("new-mac-address", param, "the address is empty")
		}
		if vmClone.Spec.NewMacAddresses == nil {
			vmClone.Spec.NewMacAddresses = map[string]string{}
		}
		vmClone.Spec.NewMacAddresses[iface] = mac
	}
	if o.newSMBiosSerial != "" {
		vmClone.Spec.NewSMBiosSerial = ptr.To(o.newSMBiosSerial)
	}
	return vmClone, nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
