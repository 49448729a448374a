package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	instancetypeinstall "github.com/hangarvm/hangar/pkg/apis/instancetype/install"
	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	"github.com/hangarvm/hangar/pkg/apis/instancetype/validation"
)

func catalogue(t *testing.T) (map[string]*instancetypev1beta1.VirtualMachineClusterInstancetype, map[string]*instancetypev1beta1.VirtualMachineClusterPreference) {
	t.Helper()
	its := map[string]*instancetypev1beta1.VirtualMachineClusterInstancetype{}
	prefs := map[string]*instancetypev1beta1.VirtualMachineClusterPreference{}
	for _, o := range Catalogue() {
		assert.Equal(t, PhaseController, o.Phase, "applied once virt-api serves instancetype.kubevirt.io")
		switch obj := o.Object.(type) {
		case *instancetypev1beta1.VirtualMachineClusterInstancetype:
			require.NotContains(t, its, obj.Name)
			its[obj.Name] = obj
		case *instancetypev1beta1.VirtualMachineClusterPreference:
			require.NotContains(t, prefs, obj.Name)
			prefs[obj.Name] = obj
		default:
			t.Fatalf("unexpected %T", obj)
		}
	}
	return its, prefs
}

// TestCommonInstancetypes checks the catalogue against KubeVirt's common-instancetypes values.
func TestCommonInstancetypes(t *testing.T) {
	its, _ := catalogue(t)
	series := map[string]int{}
	for name := range its {
		series[name[:2]]++
	}
	assert.Equal(t, map[string]int{"u1": 10, "o1": 9, "cx": 12, "m1": 10, "n1": 6}, series)

	for name, want := range map[string]struct {
		cpus   uint32
		memory string
	}{
		"u1.nano": {1, "512Mi"}, "u1.medium": {1, "4Gi"}, "u1.2xmedium": {2, "4Gi"}, "u1.8xlarge": {32, "128Gi"},
		"o1.small": {1, "2Gi"}, "cx1.medium": {1, "2Gi"}, "cx1.8xlarge1gi": {32, "64Gi"}, "m1.large": {2, "16Gi"},
		"m1.8xlarge": {32, "256Gi"}, "n1.medium": {4, "4Gi"}, "n1.8xlarge": {64, "128Gi"},
	} {
		it := its[name]
		require.NotNil(t, it, name)
		assert.Equal(t, want.cpus, it.Spec.CPU.Guest, name)
		assert.Equal(t, want.memory, it.Spec.Memory.Guest.String(), name)
	}
	assert.Nil(t, its["u1.medium"].Spec.CPU.DedicatedCPUPlacement, "u1 shares CPUs")
	assert.Equal(t, 50, its["o1.medium"].Spec.Memory.OvercommitPercent)
	assert.Equal(t, "2Mi", its["cx1.large"].Spec.Memory.Hugepages.PageSize)
	assert.Equal(t, "1Gi", its["cx1.large1gi"].Spec.Memory.Hugepages.PageSize)
	assert.Equal(t, uint32(2), *its["cx1.large"].Spec.CPU.MaxSockets)
	assert.True(t, *its["n1.large"].Spec.CPU.DedicatedCPUPlacement)
	assert.Equal(t, "1Gi", its["n1.large"].Spec.Memory.Hugepages.PageSize)
	assert.Equal(t, "general.purpose", its["u1.small"].Labels[instancetypeClassLabel])
}

func TestCommonPreferences(t *testing.T) {
	_, prefs := catalogue(t)
	for _, name := range []string{"alpine", "centos.stream9", "centos.stream10", "cirros", "debian", "fedora", "linux", "linux.efi",
		"opensuse.leap", "opensuse.tumbleweed", "rhel.8", "rhel.9", "rhel.10", "sles", "ubuntu",
		"windows.10", "windows.10.virtio", "windows.11", "windows.2k19", "windows.2k22.virtio", "windows.2k25"} {
		assert.Contains(t, prefs, name)
	}
	fedora := prefs["fedora"].Spec
	assert.Equal(t, "linux", fedora.Annotations[osAnnotation])
	assert.Equal(t, "virtio", string(fedora.Devices.PreferredDiskBus))
	assert.True(t, *fedora.Firmware.PreferredEfi.SecureBoot)
	assert.NotNil(t, fedora.Features.PreferredSmm, "secure boot needs SMM")
	assert.Equal(t, "2Gi", fedora.Requirements.Memory.Guest.String())

	win11 := prefs["windows.11"].Spec
	assert.Equal(t, instancetypev1beta1.Cores, *win11.CPU.PreferredCPUTopology)
	assert.Equal(t, "sata", string(win11.Devices.PreferredDiskBus))
	assert.Equal(t, "e1000e", win11.Devices.PreferredInterfaceModel)
	assert.True(t, *win11.Devices.PreferredTPM.Persistent)
	assert.True(t, *win11.Firmware.PreferredEfi.Persistent)
	assert.Equal(t, uint32(2), win11.Requirements.CPU.Guest)
	assert.Equal(t, uint32(8191), *win11.Features.PreferredHyperv.Spinlocks.Spinlocks)
	assert.Equal(t, "virtio", prefs["windows.11.virtio"].Spec.Devices.PreferredInterfaceModel)
	assert.Nil(t, prefs["windows.2k12"].Spec.Firmware, "older Windows boots with BIOS")
}

// TestCatalogueValidates: virt-api accepts every object of the catalogue; the warnings are
// only for what KubeVirt's series ask of hardware Hangar's guests do not have.
func TestCatalogueValidates(t *testing.T) {
	scheme := runtime.NewScheme()
	instancetypeinstall.Install(scheme)
	for _, o := range Catalogue() {
		switch obj := o.Object.(type) {
		case *instancetypev1beta1.VirtualMachineClusterInstancetype:
			var internal instancetype.VirtualMachineClusterInstancetype
			require.NoError(t, scheme.Convert(obj, &internal, nil))
			assert.Empty(t, validation.ValidateObjectMeta(&internal.ObjectMeta, false), obj.Name)
			assert.Empty(t, validation.ValidateInstancetypeSpec(&internal.Spec, field.NewPath("spec")), obj.Name)
			unsupported := validation.UnsupportedInstancetypeFields(&internal.Spec, field.NewPath("spec"))
			switch obj.Name[:2] {
			case "u1", "o1":
				assert.Empty(t, unsupported, obj.Name)
			default:
				assert.NotEmpty(t, unsupported, obj.Name)
			}
		case *instancetypev1beta1.VirtualMachineClusterPreference:
			var internal instancetype.VirtualMachineClusterPreference
			require.NoError(t, scheme.Convert(obj, &internal, nil))
			assert.Empty(t, validation.ValidateObjectMeta(&internal.ObjectMeta, false), obj.Name)
			assert.Empty(t, validation.ValidatePreferenceSpec(&internal.Spec, field.NewPath("spec")), obj.Name)
		}
	}
}
