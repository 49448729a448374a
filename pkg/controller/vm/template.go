package vm

import (
	"strconv"

	"github.com/google/uuid"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	vmicontroller "github.com/hangarvm/hangar/pkg/controller/vmi"
)

// firmwareUUIDNamespace is the namespace of KubeVirt's name-based (v5) firmware UUIDs: a VM
// without an explicit firmware UUID gets the same UUID in KubeVirt and in Hangar, and keeps it
// across restarts.
var firmwareUUIDNamespace = uuid.MustParse("6a1a24a1-4061-4607-8bf4-a3963d0c5895")

// FirmwareUUID is the stable firmware UUID of a VM without one of its own.
func FirmwareUUID(vmName string) types.UID {
	return types.UID(uuid.NewSHA1(firmwareUUIDNamespace, []byte(vmName)).String())
}

// vmiFromVM is the instance a start creates: the template's metadata and spec, the VM's name,
// a controller reference to the VM (so the garbage collector cascades), the VM generation it
// comes from, and a stable firmware UUID.
func vmiFromVM(vm *v1.VirtualMachine) *v1.VirtualMachineInstance {
	tmpl := vm.Spec.Template
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name:        vm.Name,
			Namespace:   vm.Namespace,
			Labels:      copyMap(tmpl.ObjectMeta.Labels),
			Annotations: copyMap(tmpl.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(vm, v1.SchemeGroupVersion.WithKind("VirtualMachine")),
			},
			// Set here rather than by the instance controller: one write less per start.
			Finalizers: []string{vmicontroller.Finalizer},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	if vmi.Annotations == nil {
		vmi.Annotations = map[string]string{}
	}
	vmi.Annotations[GenerationAnnotation] = strconv.FormatInt(vm.Generation, 10)
	if vmi.Spec.Domain.Firmware == nil {
		vmi.Spec.Domain.Firmware = &v1.Firmware{}
	}
	if vmi.Spec.Domain.Firmware.UUID == "" {
		vmi.Spec.Domain.Firmware.UUID = FirmwareUUID(vm.Name)
	}
	if startsPaused(vm) {
		paused := v1.StartStrategyPaused
		vmi.Spec.StartStrategy = &paused
	}
	return vmi
}

// startsPaused says whether the start request being carried out asks for a paused guest
// (virtctl start --paused).
func startsPaused(vm *v1.VirtualMachine) bool {
	r := vm.Status.StateChangeRequests
	return len(r) > 0 && r[0].Action == v1.StartRequest && r[0].Data[v1.StartRequestDataPausedKey] == v1.StartRequestDataPausedTrue
}

// templateUnchanged: the instance is what the VM's current template would create, so a new
// VM generation (a run strategy change, say) does not make it out of date.
func templateUnchanged(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
	want := vmiFromVM(vm)
	// How the instance was started is not part of the template.
	want.Spec.StartStrategy = vmi.Spec.StartStrategy
	return apiequality.Semantic.DeepEqual(want.Spec, vmi.Spec) &&
		apiequality.Semantic.DeepEqual(want.Labels, vmi.Labels)
}

// adoptable: an instance without a controller is the VM's if it carries the template's labels.
func adoptable(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
	if metav1.GetControllerOf(vmi) != nil || vm.DeletionTimestamp != nil || vmi.DeletionTimestamp != nil {
		return false
	}
	return labels.SelectorFromSet(vm.Spec.Template.ObjectMeta.Labels).Matches(labels.Set(vmi.Labels))
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
