package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/instancetype"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

func instancetypeSpec(mutate func(*instancetype.VirtualMachineInstancetypeSpec)) *instancetype.VirtualMachineInstancetypeSpec {
	spec := &instancetype.VirtualMachineInstancetypeSpec{
		CPU:    instancetype.CPUInstancetype{Guest: 2},
		Memory: instancetype.MemoryInstancetype{Guest: resource.MustParse("2Gi")},
	}
	if mutate != nil {
		mutate(spec)
	}
	return spec
}

// fields lists the paths of the errors, in order.
func fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func TestValidateInstancetypeSpec(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*instancetype.VirtualMachineInstancetypeSpec)
		want   []string
	}{
		{name: "valid", want: nil},
		{name: "no vCPUs", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.CPU.Guest = 0 }, want: []string{"spec.cpu.guest"}},
		{name: "more vCPUs than q35 takes", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.CPU.Guest = 289 }, want: []string{"spec.cpu.guest"}},
		{name: "no memory", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.Memory.Guest = resource.Quantity{} }, want: []string{"spec.memory.guest"}},
		{name: "too much memory", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.Memory.Guest = resource.MustParse("1e30") }, want: []string{"spec.memory.guest"}},
		{name: "maxGuest below guest", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) {
			s.Memory.MaxGuest = ptr.To(resource.MustParse("1Gi"))
		},
			want: []string{"spec.memory.maxGuest"}},
		{name: "overcommit above 100", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.Memory.OvercommitPercent = 101 }, want: []string{"spec.memory.overcommitPercent"}},
		{name: "negative overcommit", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.Memory.OvercommitPercent = -1 }, want: []string{"spec.memory.overcommitPercent"}},
		{name: "overcommit with huge pages", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) {
			s.Memory.OvercommitPercent = 50
			s.Memory.Hugepages = &instancetype.Hugepages{PageSize: "2Mi"}
		}, want: []string{"spec.memory.overcommitPercent"}},
		{name: "overcommit of o1", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.Memory.OvercommitPercent = 50 }},
		{name: "unknown I/O threads policy", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) {
			s.IOThreadsPolicy = ptr.To(instancetype.IOThreadsPolicy("some"))
		},
			want: []string{"spec.ioThreadsPolicy"}},
		{name: "node selector the pod API refuses", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.NodeSelector = map[string]string{"a b": "c"} },
			want: []string{"spec.nodeSelector"}},
		{name: "invalid annotation key", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) { s.Annotations = map[string]string{"/x": "y"} },
			want: []string{"spec.annotations"}},
		{name: "GPU without a name", mutate: func(s *instancetype.VirtualMachineInstancetypeSpec) {
			s.Gpus = []instancetype.GPU{{DeviceName: "nvidia.com/X"}}
		},
			want: []string{"spec.gpus[0].name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateInstancetypeSpec(instancetypeSpec(tt.mutate), field.NewPath("spec"))
			assert.Equal(t, tt.want, fields(got), "%v", got)
		})
	}
}

func TestUnsupportedInstancetypeFields(t *testing.T) {
	// cx1.medium as KubeVirt's common instance types define it.
	cx1 := instancetypeSpec(func(s *instancetype.VirtualMachineInstancetypeSpec) {
		s.CPU.DedicatedCPUPlacement = ptr.To(true)
		s.CPU.IsolateEmulatorThread = ptr.To(true)
		s.CPU.NUMA = &instancetype.NUMA{GuestMappingPassthrough: &instancetype.NUMAGuestMappingPassthrough{}}
		s.Memory.Hugepages = &instancetype.Hugepages{PageSize: "2Mi"}
		s.IOThreadsPolicy = ptr.To(instancetype.IOThreadsPolicyAuto)
	})
	got := UnsupportedInstancetypeFields(cx1, field.NewPath("spec"))
	var paths []string
	for _, p := range got {
		paths = append(paths, p.String())
	}
	assert.Equal(t, []string{"spec.cpu.dedicatedCPUPlacement", "spec.cpu.isolateEmulatorThread", "spec.cpu.numa",
		"spec.memory.hugepages", "spec.ioThreadsPolicy"}, paths)
	assert.Len(t, InstancetypeWarnings(cx1), 5)

	// dedicatedCPUPlacement: false asks for nothing Hangar lacks.
	shared := instancetypeSpec(func(s *instancetype.VirtualMachineInstancetypeSpec) { s.CPU.DedicatedCPUPlacement = ptr.To(false) })
	assert.Empty(t, UnsupportedInstancetypeFields(shared, field.NewPath("spec")))
}

func TestValidatePreferenceSpec(t *testing.T) {
	topology := func(t instancetype.PreferredCPUTopology) *instancetype.CPUPreferences {
		return &instancetype.CPUPreferences{PreferredCPUTopology: &t}
	}
	tests := []struct {
		name string
		spec instancetype.VirtualMachinePreferenceSpec
		want []string
	}{
		{name: "empty"},
		{name: "known topology", spec: instancetype.VirtualMachinePreferenceSpec{CPU: topology(instancetype.Cores)}},
		{name: "deprecated topology", spec: instancetype.VirtualMachinePreferenceSpec{CPU: topology(instancetype.DeprecatedPreferThreads)}},
		{name: "unknown topology", spec: instancetype.VirtualMachinePreferenceSpec{CPU: topology("diagonal")},
			want: []string{"spec.cpu.preferredCPUTopology"}},
		{name: "spread across cores and threads with ratio 3", spec: instancetype.VirtualMachinePreferenceSpec{CPU: &instancetype.CPUPreferences{
			PreferredCPUTopology: ptr.To(instancetype.Spread),
			SpreadOptions:        &instancetype.SpreadOptions{Across: ptr.To(instancetype.SpreadAcrossCoresThreads), Ratio: ptr.To[uint32](3)},
		}}, want: []string{"spec.cpu.spreadOptions.ratio"}},
		{name: "spread across unknown parts", spec: instancetype.VirtualMachinePreferenceSpec{CPU: &instancetype.CPUPreferences{
			PreferredCPUTopology: ptr.To(instancetype.Spread),
			SpreadOptions:        &instancetype.SpreadOptions{Across: ptr.To(instancetype.SpreadAcross("Nodes"))},
		}}, want: []string{"spec.cpu.spreadOptions.across"}},
		{name: "spread options without spread are not looked at", spec: instancetype.VirtualMachinePreferenceSpec{CPU: &instancetype.CPUPreferences{
			SpreadOptions: &instancetype.SpreadOptions{Across: ptr.To(instancetype.SpreadAcross("Nodes"))},
		}}},
		{name: "unknown disk bus", spec: instancetype.VirtualMachinePreferenceSpec{Devices: &instancetype.DevicePreferences{PreferredDiskBus: "ide"}},
			want: []string{"spec.devices.preferredDiskBus"}},
		{name: "virtio CD-ROM", spec: instancetype.VirtualMachinePreferenceSpec{Devices: &instancetype.DevicePreferences{PreferredCdromBus: kubevirt.DiskBusVirtio}},
			want: []string{"spec.devices.preferredCdromBus"}},
		{name: "requirement no guest can meet", spec: instancetype.VirtualMachinePreferenceSpec{Requirements: &instancetype.PreferenceRequirements{
			CPU: &instancetype.CPUPreferenceRequirement{Guest: 1000}}}, want: []string{"spec.requirements.cpu.guest"}},
		{name: "subdomain that is no DNS label", spec: instancetype.VirtualMachinePreferenceSpec{PreferredSubdomain: ptr.To("A_B")},
			want: []string{"spec.preferredSubdomain"}},
		{name: "negative grace period", spec: instancetype.VirtualMachinePreferenceSpec{PreferredTerminationGracePeriodSeconds: ptr.To[int64](-1)},
			want: []string{"spec.preferredTerminationGracePeriodSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidatePreferenceSpec(&tt.spec, field.NewPath("spec"))
			assert.Equal(t, tt.want, fields(got), "%v", got)
		})
	}
}

func TestPreferenceWarnings(t *testing.T) {
	spec := &instancetype.VirtualMachinePreferenceSpec{
		CPU:     &instancetype.CPUPreferences{PreferredCPUTopology: ptr.To(instancetype.DeprecatedPreferSockets)},
		Devices: &instancetype.DevicePreferences{PreferredDiskDedicatedIoThread: ptr.To(true), PreferredDiskBus: kubevirt.DiskBusVirtio},
	}
	assert.Equal(t, []string{
		"spec.cpu.preferredCPUTopology preferSockets is deprecated, use sockets",
		"spec.devices.preferredDiskDedicatedIoThread is ignored by Hangar, whose guests have no such hardware",
	}, PreferenceWarnings(spec))

	// Fields of KubeVirt's common preferences (fedora, windows.11.virtio) Hangar does without.
	spec = &instancetype.VirtualMachinePreferenceSpec{
		PreferredArchitecture:   ptr.To("amd64"),
		PreferredLaunchSecurity: &instancetype.LaunchSecurity{},
		Devices:                 &instancetype.DevicePreferences{PreferredVideoType: ptr.To("virtio")},
		Requirements:            &instancetype.PreferenceRequirements{Architecture: ptr.To("arm64")},
	}
	assert.Equal(t, []string{
		"spec.devices.preferredVideoType is ignored by Hangar, whose guests have no such hardware",
		"spec.preferredLaunchSecurity is ignored by Hangar, whose guests have no memory encryption",
		"spec.requirements.architecture arm64: Hangar's guests are amd64, VirtualMachines using this preference are refused",
	}, PreferenceWarnings(spec))
	spec.Requirements.Architecture = ptr.To("amd64")
	assert.Len(t, PreferenceWarnings(spec), 2)
}

func TestSpreadOptions(t *testing.T) {
	ratio, across := SpreadOptions(&instancetype.VirtualMachinePreferenceSpec{})
	assert.Equal(t, uint32(2), ratio)
	assert.Equal(t, instancetype.SpreadAcrossSocketsCores, across)

	ratio, _ = SpreadOptions(&instancetype.VirtualMachinePreferenceSpec{PreferSpreadSocketToCoreRatio: 4})
	assert.Equal(t, uint32(4), ratio)

	ratio, across = SpreadOptions(&instancetype.VirtualMachinePreferenceSpec{PreferSpreadSocketToCoreRatio: 4, CPU: &instancetype.CPUPreferences{
		SpreadOptions: &instancetype.SpreadOptions{Ratio: ptr.To[uint32](3), Across: ptr.To(instancetype.SpreadAcrossSocketsCoresThreads)}}})
	assert.Equal(t, uint32(3), ratio, "spreadOptions.ratio wins")
	assert.Equal(t, instancetype.SpreadAcrossSocketsCoresThreads, across)
}
