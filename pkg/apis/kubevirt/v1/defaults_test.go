package v1_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func defaultedScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func TestVirtualMachineRunStrategyDefaults(t *testing.T) {
	scheme := defaultedScheme(t)
	tests := []struct {
		name         string
		running      *bool
		runStrategy  *v1.VirtualMachineRunStrategy
		wantRunning  *bool
		wantStrategy *v1.VirtualMachineRunStrategy
	}{
		{name: "neither: halted", wantStrategy: ptr.To(v1.RunStrategyHalted)},
		{name: "running kept as written", running: ptr.To(true), wantRunning: ptr.To(true)},
		{name: "runStrategy kept", runStrategy: ptr.To(v1.RunStrategyManual), wantStrategy: ptr.To(v1.RunStrategyManual)},
		{name: "both kept for validation to reject", running: ptr.To(false), runStrategy: ptr.To(v1.RunStrategyAlways),
			wantRunning: ptr.To(false), wantStrategy: ptr.To(v1.RunStrategyAlways)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm := &v1.VirtualMachine{Spec: v1.VirtualMachineSpec{Running: tc.running, RunStrategy: tc.runStrategy}}
			scheme.Default(vm)
			assert.Equal(t, tc.wantRunning, vm.Spec.Running)
			assert.Equal(t, tc.wantStrategy, vm.Spec.RunStrategy)
		})
	}
}

func TestVirtualMachineInstanceSpecDefaults(t *testing.T) {
	scheme := defaultedScheme(t)
	mem := resource.MustParse("128Mi")
	tests := []struct {
		name  string
		spec  v1.VirtualMachineInstanceSpec
		check func(t *testing.T, spec *v1.VirtualMachineInstanceSpec)
	}{
		{
			name: "guest memory from requests",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: mem}}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, "128Mi", s.Domain.Memory.Guest.String())
			},
		},
		{
			name: "guest memory from limits when no request",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, "1Gi", s.Domain.Memory.Guest.String())
			},
		},
		{
			name: "explicit guest memory wins",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
				Memory:    &v1.Memory{Guest: ptr.To(resource.MustParse("64Mi"))},
				Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: mem}}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, "64Mi", s.Domain.Memory.Guest.String())
			},
		},
		{
			name: "no memory anywhere stays unset for validation",
			spec: v1.VirtualMachineInstanceSpec{},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Nil(t, s.Domain.Memory)
			},
		},
		{
			name: "machine, ACPI, grace period, topology",
			spec: v1.VirtualMachineInstanceSpec{},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, "q35", s.Domain.Machine.Type)
				assert.Equal(t, ptr.To(true), s.Domain.Features.ACPI.Enabled)
				assert.Equal(t, ptr.To[int64](30), s.TerminationGracePeriodSeconds)
				assert.Equal(t, &v1.CPU{Cores: 1, Sockets: 1, Threads: 1}, s.Domain.CPU)
			},
		},
		{
			name: "cores from a CPU limit, rounded up",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2500m")}}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, &v1.CPU{Cores: 3, Sockets: 1, Threads: 1}, s.Domain.CPU)
			},
		},
		{
			// MilliValue of 1e18 CPUs overflows an int64; the count must not wrap to a
			// small, valid-looking topology (validation then refuses both).
			name: "cores from an absurd CPU request saturate instead of wrapping",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e18")}}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, &v1.CPU{Cores: math.MaxUint32, Sockets: 1, Threads: 1}, s.Domain.CPU)
			},
		},
		{
			// Exact arithmetic on this quantity takes hours; a regression hangs here.
			name: "cores from a CPU limit of 1e999999999",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e999999999")}}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, &v1.CPU{Cores: math.MaxUint32, Sockets: 1, Threads: 1}, s.Domain.CPU)
			},
		},
		{
			name: "a negative CPU request gives one core",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1e999999999")}}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, &v1.CPU{Cores: 1, Sockets: 1, Threads: 1}, s.Domain.CPU)
			},
		},
		{
			name: "partial topology filled with ones",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{CPU: &v1.CPU{Sockets: 2, Model: "host-model"}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, &v1.CPU{Cores: 1, Sockets: 2, Threads: 1, Model: "host-model"}, s.Domain.CPU)
			},
		},
		{
			name: "pod network with masquerade when none is given",
			spec: v1.VirtualMachineInstanceSpec{},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}, s.Networks)
				assert.Equal(t, []v1.Interface{{Name: "default", Model: "virtio",
					InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}}, s.Domain.Devices.Interfaces)
			},
		},
		{
			name: "no pod network when autoattachPodInterface is false",
			spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Devices: v1.Devices{AutoattachPodInterface: ptr.To(false)}}},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Empty(t, s.Networks)
				assert.Empty(t, s.Domain.Devices.Interfaces)
			},
		},
		{
			name: "declared networks are left alone, interfaces get a binding and TCP ports",
			spec: v1.VirtualMachineInstanceSpec{
				Networks: []v1.Network{{Name: "net", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}},
				Domain:   v1.DomainSpec{Devices: v1.Devices{Interfaces: []v1.Interface{{Name: "net", Ports: []v1.Port{{Port: 80}}}}}},
			},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Len(t, s.Networks, 1)
				iface := s.Domain.Devices.Interfaces[0]
				assert.NotNil(t, iface.Masquerade)
				assert.Equal(t, "virtio", iface.Model)
				assert.Equal(t, "TCP", iface.Ports[0].Protocol)
			},
		},
		{
			name: "bridge binding kept",
			spec: v1.VirtualMachineInstanceSpec{
				Networks: []v1.Network{{Name: "net", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}},
				Domain: v1.DomainSpec{Devices: v1.Devices{Interfaces: []v1.Interface{{Name: "net",
					InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}}}}},
			},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Nil(t, s.Domain.Devices.Interfaces[0].Masquerade)
				assert.NotNil(t, s.Domain.Devices.Interfaces[0].Bridge)
			},
		},
		{
			name: "every volume gets a virtio disk; cdroms get sata and read-only",
			spec: v1.VirtualMachineInstanceSpec{
				Volumes: []v1.Volume{{Name: "root"}, {Name: "seed"}, {Name: "iso"}},
				Domain: v1.DomainSpec{Devices: v1.Devices{Disks: []v1.Disk{
					{Name: "iso", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{}}},
					{Name: "root", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA}}},
				}}},
			},
			check: func(t *testing.T, s *v1.VirtualMachineInstanceSpec) {
				assert.Equal(t, []v1.Disk{
					{Name: "iso", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusSATA, ReadOnly: ptr.To(true)}}},
					{Name: "root", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA}}},
					{Name: "seed", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}},
				}, s.Domain.Devices.Disks)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &v1.VirtualMachineInstance{Spec: tc.spec}
			scheme.Default(vmi)
			tc.check(t, &vmi.Spec)

			// Defaulting twice changes nothing: decoding a stored object must not alter it.
			again := vmi.DeepCopy()
			scheme.Default(again)
			assert.Equal(t, vmi, again)
		})
	}
}

func TestTemplatesAreDefaulted(t *testing.T) {
	scheme := defaultedScheme(t)
	vm := &v1.VirtualMachine{Spec: v1.VirtualMachineSpec{Template: &v1.VirtualMachineInstanceTemplateSpec{}}}
	scheme.Default(vm)
	assert.Equal(t, "q35", vm.Spec.Template.Spec.Domain.Machine.Type)

	rs := &v1.VirtualMachineInstanceReplicaSet{Spec: v1.VirtualMachineInstanceReplicaSetSpec{Template: &v1.VirtualMachineInstanceTemplateSpec{}}}
	scheme.Default(rs)
	assert.Equal(t, ptr.To[int32](1), rs.Spec.Replicas)
	assert.Len(t, rs.Spec.Template.Spec.Networks, 1)
}
