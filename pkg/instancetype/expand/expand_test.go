package expand

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

var (
	itFrom   = Source{Kind: "VirtualMachineClusterInstancetype", Name: "u1.medium"}
	prefFrom = Source{Kind: "VirtualMachineClusterPreference", Name: "fedora"}
	specPath = field.NewPath("spec")
)

func u1medium() *instancetype.VirtualMachineInstancetypeSpec {
	return &instancetype.VirtualMachineInstancetypeSpec{
		CPU:         instancetype.CPUInstancetype{Guest: 1},
		Memory:      instancetype.MemoryInstancetype{Guest: resource.MustParse("4Gi")},
		Annotations: map[string]string{"from": "instancetype", "kept": "instancetype"},
	}
}

func quantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func errorFields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func TestInstancetypeConflicts(t *testing.T) {
	tests := []struct {
		name   string
		tmpl   kubevirt.VirtualMachineInstanceTemplateSpec
		fields []string
	}{
		{name: "an empty template takes everything"},
		{name: "cores", tmpl: kubevirt.VirtualMachineInstanceTemplateSpec{Spec: kubevirt.VirtualMachineInstanceSpec{
			Domain: kubevirt.DomainSpec{CPU: &kubevirt.CPU{Cores: 2}}}},
			fields: []string{"spec.template.spec.domain.cpu.cores"}},
		{name: "guest memory", tmpl: kubevirt.VirtualMachineInstanceTemplateSpec{Spec: kubevirt.VirtualMachineInstanceSpec{
			Domain: kubevirt.DomainSpec{Memory: &kubevirt.Memory{Guest: quantity("1Gi")}}}},
			fields: []string{"spec.template.spec.domain.memory.guest"}},
		{name: "resources", tmpl: kubevirt.VirtualMachineInstanceTemplateSpec{Spec: kubevirt.VirtualMachineInstanceSpec{
			Domain: kubevirt.DomainSpec{Resources: kubevirt.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}},
			fields: []string{"spec.template.spec.domain.resources.requests.memory", "spec.template.spec.domain.resources.limits.cpu"}},
		{name: "a CPU model the instance type does not set is the template's", tmpl: kubevirt.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirt.VirtualMachineInstanceSpec{Domain: kubevirt.DomainSpec{CPU: &kubevirt.CPU{Model: "host-passthrough"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := tt.tmpl.DeepCopy()
			errs := Template(tmpl, u1medium(), itFrom, nil, Source{}, specPath)
			assert.ElementsMatch(t, tt.fields, errorFields(errs))
			for _, e := range errs {
				assert.Contains(t, e.Detail, "VirtualMachineClusterInstancetype u1.medium", "the message names the instance type")
				assert.Contains(t, e.Detail, "spec.", "the message names the instance type's field")
			}
			if len(tt.fields) == 0 {
				require.Empty(t, errs)
				assert.Equal(t, "4Gi", tmpl.Spec.Domain.Memory.Guest.String())
				assert.Equal(t, uint32(1), tmpl.Spec.Domain.CPU.Sockets)
			}
		})
	}
}

func TestInstancetypeSetsItsFields(t *testing.T) {
	it := u1medium()
	it.CPU.Guest = 4
	it.CPU.Model = ptr.To("Haswell")
	it.Memory.OvercommitPercent = 25
	it.NodeSelector = map[string]string{"zone": "a"}
	it.SchedulerName = "custom"
	tmpl := &kubevirt.VirtualMachineInstanceTemplateSpec{}
	tmpl.ObjectMeta.Annotations = map[string]string{"kept": "template"}

	require.Empty(t, Template(tmpl, it, itFrom, nil, Source{}, specPath))
	assert.Equal(t, &kubevirt.CPU{Sockets: 4, Cores: 1, Threads: 1, Model: "Haswell"}, tmpl.Spec.Domain.CPU)
	assert.Equal(t, "4Gi", tmpl.Spec.Domain.Memory.Guest.String())
	request := tmpl.Spec.Domain.Resources.Requests[corev1.ResourceMemory]
	assert.Equal(t, int64(3*1024*1024*1024), request.Value(), "the pod asks for 75 %% of the guest's memory")
	assert.Equal(t, map[string]string{"zone": "a"}, tmpl.Spec.NodeSelector)
	assert.Equal(t, "custom", tmpl.Spec.SchedulerName)
	assert.Equal(t, map[string]string{"from": "instancetype", "kept": "template"}, tmpl.ObjectMeta.Annotations)
}

func TestUnsupportedInstancetypeFields(t *testing.T) {
	it := u1medium()
	it.CPU.DedicatedCPUPlacement = ptr.To(true)
	it.Memory.Hugepages = &instancetype.Hugepages{PageSize: "2Mi"}
	errs := Template(&kubevirt.VirtualMachineInstanceTemplateSpec{}, it, itFrom, nil, Source{}, specPath)
	require.Len(t, errs, 2)
	assert.Equal(t, "spec.instancetype.name", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "spec.cpu.dedicatedCPUPlacement")
	assert.Contains(t, errs[1].Detail, "spec.memory.hugepages")
}

func TestTopology(t *testing.T) {
	topo := func(t instancetype.PreferredCPUTopology) *instancetype.VirtualMachinePreferenceSpec {
		return &instancetype.VirtualMachinePreferenceSpec{CPU: &instancetype.CPUPreferences{PreferredCPUTopology: &t}}
	}
	spread := func(across instancetype.SpreadAcross, ratio uint32) *instancetype.VirtualMachinePreferenceSpec {
		p := topo(instancetype.Spread)
		p.CPU.SpreadOptions = &instancetype.SpreadOptions{Across: &across, Ratio: &ratio}
		return p
	}
	tests := []struct {
		name                   string
		guest                  uint32
		pref                   *instancetype.VirtualMachinePreferenceSpec
		sockets, cores, thread uint32
		err                    bool
	}{
		{name: "no preference: sockets", guest: 4, sockets: 4, cores: 1, thread: 1},
		{name: "cores", guest: 4, pref: topo(instancetype.Cores), sockets: 1, cores: 4, thread: 1},
		{name: "deprecated preferThreads", guest: 4, pref: topo(instancetype.DeprecatedPreferThreads), sockets: 1, cores: 1, thread: 4},
		{name: "any", guest: 2, pref: topo(instancetype.Any), sockets: 2, cores: 1, thread: 1},
		{name: "spread, default ratio 2 over sockets and cores", guest: 8, pref: topo(instancetype.Spread), sockets: 4, cores: 2, thread: 1},
		{name: "spread over cores and threads", guest: 8, pref: spread(instancetype.SpreadAcrossCoresThreads, 2), sockets: 1, cores: 4, thread: 2},
		{name: "spread over sockets, cores and threads", guest: 16, pref: spread(instancetype.SpreadAcrossSocketsCoresThreads, 4), sockets: 2, cores: 4, thread: 2},
		{name: "spread that does not divide", guest: 3, pref: topo(instancetype.Spread), err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := u1medium()
			it.CPU.Guest = tt.guest
			tmpl := &kubevirt.VirtualMachineInstanceTemplateSpec{}
			errs := Template(tmpl, it, itFrom, tt.pref, prefFrom, specPath)
			if tt.err {
				require.Len(t, errs, 1)
				assert.Equal(t, "spec.preference.name", errs[0].Field)
				return
			}
			require.Empty(t, errs)
			assert.Equal(t, []uint32{tt.sockets, tt.cores, tt.thread},
				[]uint32{tmpl.Spec.Domain.CPU.Sockets, tmpl.Spec.Domain.CPU.Cores, tmpl.Spec.Domain.CPU.Threads})
		})
	}
}

func TestPreferenceFillsOnlyWhatIsUnset(t *testing.T) {
	pref := &instancetype.VirtualMachinePreferenceSpec{
		Devices: &instancetype.DevicePreferences{
			PreferredDiskBus:                 kubevirt.DiskBusSATA,
			PreferredCdromBus:                kubevirt.DiskBusSCSI,
			PreferredInterfaceModel:          "e1000e",
			PreferredRng:                     &kubevirt.Rng{},
			PreferredAutoattachSerialConsole: ptr.To(false),
			PreferredTPM:                     &kubevirt.TPMDevice{},
		},
		Firmware:                               &instancetype.FirmwarePreferences{PreferredEfi: &kubevirt.EFI{SecureBoot: ptr.To(true)}},
		Machine:                                &instancetype.MachinePreferences{PreferredMachineType: "pc-q35-rhel9.2.0"},
		Features:                               &instancetype.FeaturePreferences{PreferredSmm: &kubevirt.FeatureState{}},
		PreferredTerminationGracePeriodSeconds: ptr.To[int64](180),
		CPU:                                    &instancetype.CPUPreferences{PreferredCPUFeatures: []kubevirt.CPUFeature{{Name: "vmx"}, {Name: "pcid"}}},
		Annotations:                            map[string]string{"os": "linux"},
	}
	tmpl := &kubevirt.VirtualMachineInstanceTemplateSpec{Spec: kubevirt.VirtualMachineInstanceSpec{
		Domain: kubevirt.DomainSpec{
			CPU: &kubevirt.CPU{Features: []kubevirt.CPUFeature{{Name: "vmx", Policy: "disable"}}},
			Devices: kubevirt.Devices{
				Disks: []kubevirt.Disk{
					{Name: "root"},
					{Name: "data", DiskDevice: kubevirt.DiskDevice{Disk: &kubevirt.DiskTarget{Bus: kubevirt.DiskBusVirtio}}},
					{Name: "iso", DiskDevice: kubevirt.DiskDevice{CDRom: &kubevirt.CDRomTarget{}}},
				},
				Interfaces: []kubevirt.Interface{{Name: "default"}, {Name: "other", Model: "virtio"}},
			},
		},
		Volumes: []kubevirt.Volume{{Name: "root"}, {Name: "data"}, {Name: "iso"}, {Name: "cloudinit"}},
	}}

	require.Empty(t, Template(tmpl, nil, Source{}, pref, prefFrom, specPath))
	disks := tmpl.Spec.Domain.Devices.Disks
	require.Len(t, disks, 4, "a volume without a disk gets one, on the preferred bus")
	assert.Equal(t, kubevirt.DiskBusSATA, disks[0].Disk.Bus)
	assert.Equal(t, kubevirt.DiskBusVirtio, disks[1].Disk.Bus, "the template's bus stays")
	assert.Equal(t, kubevirt.DiskBusSCSI, disks[2].CDRom.Bus)
	assert.Equal(t, "cloudinit", disks[3].Name)
	assert.Equal(t, kubevirt.DiskBusSATA, disks[3].Disk.Bus)
	assert.Equal(t, "e1000e", tmpl.Spec.Domain.Devices.Interfaces[0].Model)
	assert.Equal(t, "virtio", tmpl.Spec.Domain.Devices.Interfaces[1].Model)
	assert.NotNil(t, tmpl.Spec.Domain.Devices.Rng)
	assert.NotNil(t, tmpl.Spec.Domain.Devices.TPM)
	assert.False(t, *tmpl.Spec.Domain.Devices.AutoattachSerialConsole)
	assert.True(t, *tmpl.Spec.Domain.Firmware.Bootloader.EFI.SecureBoot)
	assert.Equal(t, "pc-q35-rhel9.2.0", tmpl.Spec.Domain.Machine.Type)
	assert.NotNil(t, tmpl.Spec.Domain.Features.SMM)
	assert.Equal(t, int64(180), *tmpl.Spec.TerminationGracePeriodSeconds)
	assert.Equal(t, []kubevirt.CPUFeature{{Name: "vmx", Policy: "disable"}, {Name: "pcid"}}, tmpl.Spec.Domain.CPU.Features)
	assert.Equal(t, "linux", tmpl.ObjectMeta.Annotations["os"])

	// The preference's values never replace the template's.
	tmpl = &kubevirt.VirtualMachineInstanceTemplateSpec{Spec: kubevirt.VirtualMachineInstanceSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](5),
		Domain: kubevirt.DomainSpec{
			Machine:  &kubevirt.Machine{Type: "q35"},
			Firmware: &kubevirt.Firmware{Bootloader: &kubevirt.Bootloader{BIOS: &kubevirt.BIOS{}}},
		},
	}}
	require.Empty(t, Template(tmpl, nil, Source{}, pref, prefFrom, specPath))
	assert.Equal(t, "q35", tmpl.Spec.Domain.Machine.Type)
	assert.NotNil(t, tmpl.Spec.Domain.Firmware.Bootloader.BIOS)
	assert.Nil(t, tmpl.Spec.Domain.Firmware.Bootloader.EFI)
	assert.Equal(t, int64(5), *tmpl.Spec.TerminationGracePeriodSeconds)
}

func TestPreferenceRequirements(t *testing.T) {
	pref := &instancetype.VirtualMachinePreferenceSpec{Requirements: &instancetype.PreferenceRequirements{
		CPU:    &instancetype.CPUPreferenceRequirement{Guest: 2},
		Memory: &instancetype.MemoryPreferenceRequirement{Guest: resource.MustParse("8Gi")},
	}}
	errs := Template(&kubevirt.VirtualMachineInstanceTemplateSpec{}, u1medium(), itFrom, pref, prefFrom, specPath)
	require.Len(t, errs, 2)
	assert.Equal(t, []string{"spec.template.spec.domain.cpu", "spec.template.spec.domain.memory.guest"}, errorFields(errs))
	assert.True(t, strings.Contains(errs[1].Detail, "8Gi"), errs[1].Detail)

	it := u1medium()
	it.CPU.Guest, it.Memory.Guest = 2, resource.MustParse("8Gi")
	assert.Empty(t, Template(&kubevirt.VirtualMachineInstanceTemplateSpec{}, it, itFrom, pref, prefFrom, specPath))
}

func TestPreferenceArchitecture(t *testing.T) {
	for arch, refused := range map[string]bool{"amd64": false, "arm64": true} {
		a := arch
		pref := &instancetype.VirtualMachinePreferenceSpec{Requirements: &instancetype.PreferenceRequirements{Architecture: &a}}
		errs := Template(&kubevirt.VirtualMachineInstanceTemplateSpec{}, u1medium(), itFrom, pref, prefFrom, specPath)
		if !refused {
			assert.Empty(t, errs, arch)
			continue
		}
		require.Len(t, errs, 1, arch)
		assert.Equal(t, "spec.preference.name", errs[0].Field)
		assert.Contains(t, errs[0].Detail, "arm64")
	}
}
