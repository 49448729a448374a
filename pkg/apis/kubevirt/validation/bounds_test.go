package validation

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

type specCase struct {
	name   string
	mutate func(s *kubevirt.VirtualMachineInstanceSpec)
	// want are the errors, with paths relative to the spec; nil means the spec is valid.
	want []wantErr
}

// boundCases are one case per bound or rule on what a user sets: just past it is refused
// with the field's path, and at it (where there is an "at") is accepted.
var boundCases = []specCase{
	// vCPUs: cores × sockets × threads ≤ MaxVCPUs, without overflow.
	{"288 vCPUs", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.CPU = &kubevirt.CPU{Cores: 9, Sockets: 4, Threads: 8}
	}, nil},
	{"289 vCPUs", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.CPU = &kubevirt.CPU{Cores: 289, Sockets: 1, Threads: 1}
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.cpu.cores"}}},
	{"a product over 288", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.CPU = &kubevirt.CPU{Cores: 16, Sockets: 16, Threads: 2}
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.cpu"}}},
	{"2^21 each overflows an int64 product", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.CPU = &kubevirt.CPU{Cores: 1 << 21, Sockets: 1 << 21, Threads: 1 << 21}
	}, []wantErr{{field.ErrorTypeInvalid, "domain.cpu.cores"}, {field.ErrorTypeInvalid, "domain.cpu.sockets"}, {field.ErrorTypeInvalid, "domain.cpu.threads"}}},
	{"max uint32 threads", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Domain.CPU.Threads = math.MaxUint32 },
		[]wantErr{{field.ErrorTypeInvalid, "domain.cpu.threads"}}},
	// CPU requests and limits.
	{"288 CPUs requested", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("288")
	}, nil},
	{"289 CPUs requested", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("289")
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.resources.requests[cpu]"}}},
	{"1e18 CPUs limited", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e18")}
	}, []wantErr{{field.ErrorTypeInvalid, "domain.resources.limits[cpu]"}}},
	{"negative CPU request", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("-1")
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.resources.requests[cpu]"}}},
	// Memory.
	{"16Ti of guest memory", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Memory.Guest = ptr.To(resource.MustParse("16Ti"))
		s.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("16Ti")
	}, nil},
	{"guest memory over 16Ti", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Memory.Guest = ptr.To(resource.MustParse("16385Gi"))
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.memory.guest"}}},
	{"1e30 bytes of guest memory", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Memory.Guest = ptr.To(resource.MustParse("1e30"))
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.memory.guest"}}},
	{"memory request over 16Ti", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("17Ti")
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.resources.requests[memory]"}}},
	{"memory limit over 16Ti", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Ei")}
	}, []wantErr{{field.ErrorTypeInvalid, "domain.resources.limits[memory]"}}},
	{"guest memory under 1Mi", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Memory.Guest = ptr.To(resource.MustParse("1023Ki"))
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.memory.guest"}}},
	{"negative memory limit", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Gi")}
	}, []wantErr{{field.ErrorTypeInvalid, "domain.resources.limits[memory]"}, {field.ErrorTypeInvalid, "domain.resources.requests[memory]"},
		{field.ErrorTypeInvalid, "domain.memory.guest"}}},
	// Quantities whose exact comparison would take hours (the decimal scaled by 10^999999999):
	// refused from their approximate value. A regression hangs these cases.
	{"guest memory of 1e999999999 bytes", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Memory.Guest = ptr.To(resource.MustParse("1e999999999"))
	}, []wantErr{{field.ErrorTypeInvalid, "domain.memory.guest"}}},
	{"requests and limits of ±1e999999999", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Resources.Requests["example.com/widget"] = resource.MustParse("-1e999999999")
		s.Domain.Resources.Limits = corev1.ResourceList{"example.com/widget": resource.MustParse("1e999999998"), corev1.ResourceCPU: resource.MustParse("1e999999999")}
	}, []wantErr{{field.ErrorTypeInvalid, "domain.resources.requests[example.com/widget]"}, {field.ErrorTypeInvalid, "domain.resources.limits[example.com/widget]"},
		{field.ErrorTypeInvalid, "domain.resources.limits[cpu]"}}},
	{"an empty disk of 1e999999999 bytes", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0] = emptyDisk("root", "1e999999999") },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].emptyDisk.capacity"}}},
	// emptyDisk.capacity.
	{"a 16Ti empty disk", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0] = emptyDisk("root", "16Ti") }, nil},
	{"an empty disk over 16Ti", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0] = emptyDisk("root", "16385Gi") },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].emptyDisk.capacity"}}},
	{"an empty disk of 1e30 bytes", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0] = emptyDisk("root", "1e30") },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].emptyDisk.capacity"}}},
	{"a negative empty disk", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0] = emptyDisk("root", "-1Gi") },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].emptyDisk.capacity"}}},
	// terminationGracePeriodSeconds.
	{"a grace period of one year", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.TerminationGracePeriodSeconds = ptr.To(MaxTerminationGracePeriodSeconds)
	}, nil},
	{"a grace period over a year", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.TerminationGracePeriodSeconds = ptr.To(MaxTerminationGracePeriodSeconds + 1)
	},
		[]wantErr{{field.ErrorTypeInvalid, "terminationGracePeriodSeconds"}}},
	{"a grace period that overflows with the launcher's margin", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.TerminationGracePeriodSeconds = ptr.To[int64](math.MaxInt64)
	}, []wantErr{{field.ErrorTypeInvalid, "terminationGracePeriodSeconds"}}},
	// bootOrder.
	{"boot order 2^31-1", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Disks[0].BootOrder = ptr.To[uint](math.MaxInt32)
	}, nil},
	{"boot order 2^31", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Disks[0].BootOrder = ptr.To[uint](math.MaxInt32 + 1)
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.devices.disks[0].bootOrder"}}},
	{"interface boot order 2^32", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Interfaces[0].BootOrder = ptr.To[uint](1 << 32)
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.devices.interfaces[0].bootOrder"}}},
	// Ports.
	{"port 65535", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Domain.Devices.Interfaces[0].Ports[0].Port = 65535 }, nil},
	{"port 65536", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Domain.Devices.Interfaces[0].Ports[0].Port = 65536 },
		[]wantErr{{field.ErrorTypeInvalid, "domain.devices.interfaces[0].ports[0].port"}}},
	// Serial numbers.
	{"a 256-character disk serial", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Disks[0].Serial = strings.Repeat("a", 256)
	}, nil},
	{"a 257-character disk serial", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Disks[0].Serial = strings.Repeat("a", 257)
	},
		[]wantErr{{field.ErrorTypeTooLong, "domain.devices.disks[0].serial"}}},
	{"a firmware serial with a space", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Domain.Firmware = &kubevirt.Firmware{Serial: "a b"} },
		[]wantErr{{field.ErrorTypeInvalid, "domain.firmware.serial"}}},
	// MACs.
	{"a locally administered unicast MAC", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Interfaces[0].MacAddress = "02:00:00:00:00:01"
	}, nil},
	{"a MAC in dashes", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Interfaces[0].MacAddress = "de-ad-00-00-be-af"
	}, nil},
	{"a multicast MAC", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Interfaces[0].MacAddress = "01:00:5e:00:00:01"
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.devices.interfaces[0].macAddress"}}},
	{"the broadcast MAC", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Interfaces[0].MacAddress = "ff:ff:ff:ff:ff:ff"
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.devices.interfaces[0].macAddress"}}},
	{"the zero MAC", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Interfaces[0].MacAddress = "00:00:00:00:00:00"
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.devices.interfaces[0].macAddress"}}},
	{"an EUI-64 MAC", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Devices.Interfaces[0].MacAddress = "02:00:00:00:00:00:00:01"
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.devices.interfaces[0].macAddress"}}},
	// vmNetworkCIDR.
	{"a /30 guest network", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "192.168.7.4/30" }, nil},
	{"a /31 guest network", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "192.168.7.4/31" },
		[]wantErr{{field.ErrorTypeInvalid, "networks[0].pod.vmNetworkCIDR"}}},
	{"a /32 guest network", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "10.0.2.2/32" },
		[]wantErr{{field.ErrorTypeInvalid, "networks[0].pod.vmNetworkCIDR"}}},
	{"an IPv6 guest network", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "fd10:0:2::/120" },
		[]wantErr{{field.ErrorTypeInvalid, "networks[0].pod.vmNetworkCIDR"}}},
	{"an IPv4-mapped IPv6 guest network", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "::ffff:10.0.2.0/120" },
		[]wantErr{{field.ErrorTypeInvalid, "networks[0].pod.vmNetworkCIDR"}}},
	{"a loopback guest network", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "127.0.0.0/24" },
		[]wantErr{{field.ErrorTypeInvalid, "networks[0].pod.vmNetworkCIDR"}}},
	{"a multicast guest network", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "224.0.0.0/24" },
		[]wantErr{{field.ErrorTypeInvalid, "networks[0].pod.vmNetworkCIDR"}}},
	{"the whole address space", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "10.0.0.0/0" },
		[]wantErr{{field.ErrorTypeInvalid, "networks[0].pod.vmNetworkCIDR"}}},
	{"host bits set are masked, as the binding does", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Networks[0].Pod.VMNetworkCIDR = "10.0.2.77/24" }, nil},
	// Machine type, NIC model, firmware UUID.
	{"a versioned q35 machine", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Domain.Machine = &kubevirt.Machine{Type: "pc-q35-7.2"} }, nil},
	{"the i440fx machine", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Domain.Machine = &kubevirt.Machine{Type: "pc"} },
		[]wantErr{{field.ErrorTypeNotSupported, "domain.machine.type"}}},
	{"an unknown NIC model", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Domain.Devices.Interfaces[0].Model = "igb" },
		[]wantErr{{field.ErrorTypeNotSupported, "domain.devices.interfaces[0].model"}}},
	{"a firmware UUID", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Firmware = &kubevirt.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223"}
	}, nil},
	{"a firmware UUID libvirt cannot read", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Firmware = &kubevirt.Firmware{UUID: "not-a-uuid"}
	},
		[]wantErr{{field.ErrorTypeInvalid, "domain.firmware.uuid"}}},
	// Derived names: a containerDisk's init container, a claim's pod volume and device path.
	{"a 48-character containerDisk volume", func(s *kubevirt.VirtualMachineInstanceSpec) { renameVolume(s, 0, strings.Repeat("r", 48)) }, nil},
	{"a 49-character containerDisk volume", func(s *kubevirt.VirtualMachineInstanceSpec) { renameVolume(s, 0, strings.Repeat("r", 49)) },
		[]wantErr{{field.ErrorTypeTooLong, "volumes[0].name"}}},
	{"a claim named as a launcher volume", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Volumes[0] = claim("hangar-sockets", "data")
		s.Domain.Devices.Disks[0].Name = "hangar-sockets"
	}, []wantErr{{field.ErrorTypeInvalid, "volumes[0].name"}}},
	{"a containerDisk named as a launcher volume (an image volume takes its name)", func(s *kubevirt.VirtualMachineInstanceSpec) {
		renameVolume(s, 0, "hangar-private")
	}, []wantErr{{field.ErrorTypeInvalid, "volumes[0].name"}}},
	{"a claim named as a container device", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Volumes[0] = claim("kvm", "data")
		s.Domain.Devices.Disks[0].Name = "kvm"
	}, []wantErr{{field.ErrorTypeInvalid, "volumes[0].name"}}},
	{"a claim name no claim can have", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0] = claim("root", "Data_1") },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].persistentVolumeClaim.claimName"}}},
	// Pod-API fields.
	{"an image with a space", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0].ContainerDisk.Image = "example/disk latest" },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].containerDisk.image"}}},
	{"an image with trailing whitespace", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0].ContainerDisk.Image = "example/disk " },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].containerDisk.image"}}},
	{"an upper-case repository", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0].ContainerDisk.Image = "Example/Disk" },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].containerDisk.image"}}},
	{"a registry, port, tag and digest", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Volumes[0].ContainerDisk.Image = "registry.local:5000/disks/fedora:40@sha256:" + strings.Repeat("ab", 32)
	}, nil},
	{"a kernelBoot image kubelet cannot parse", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Domain.Firmware = &kubevirt.Firmware{KernelBoot: &kubevirt.KernelBoot{Container: &kubevirt.KernelBootContainer{Image: "kernel::1", KernelPath: "/vmlinuz"}}}
	}, []wantErr{{field.ErrorTypeInvalid, "domain.firmware.kernelBoot.container.image"}}},
	{"a pull secret name no secret can have", func(s *kubevirt.VirtualMachineInstanceSpec) { s.Volumes[0].ContainerDisk.ImagePullSecret = "Reg Cred" },
		[]wantErr{{field.ErrorTypeInvalid, "volumes[0].containerDisk.imagePullSecret"}}},
	{"a cloud-init secret name no secret can have", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Volumes[1].CloudInitNoCloud = &kubevirt.CloudInitNoCloudSource{UserDataSecretRef: &corev1.LocalObjectReference{Name: "a/b"}}
	}, []wantErr{{field.ErrorTypeInvalid, "volumes[1].cloudInitNoCloud.secretRef.name"}}},
	{"a priority class name that is no DNS subdomain", func(s *kubevirt.VirtualMachineInstanceSpec) { s.PriorityClassName = "High_Priority" },
		[]wantErr{{field.ErrorTypeInvalid, "priorityClassName"}}},
	{"a scheduler name that is no DNS subdomain", func(s *kubevirt.VirtualMachineInstanceSpec) { s.SchedulerName = "my scheduler" },
		[]wantErr{{field.ErrorTypeInvalid, "schedulerName"}}},
	{"a toleration value that is no label value", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "a b"}}
	}, []wantErr{{field.ErrorTypeInvalid, "tolerations[0].value"}}},
	{"node affinity without terms", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
	}, []wantErr{{field.ErrorTypeRequired, "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"}}},
	{"pod anti-affinity without a topology key", func(s *kubevirt.VirtualMachineInstanceSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 101, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		}}}}
	}, []wantErr{
		{field.ErrorTypeInvalid, "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"},
		{field.ErrorTypeRequired, "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey"},
	}},
}

func emptyDisk(name, capacity string) kubevirt.Volume {
	return kubevirt.Volume{Name: name, VolumeSource: kubevirt.VolumeSource{EmptyDisk: &kubevirt.EmptyDiskSource{Capacity: resource.MustParse(capacity)}}}
}

func claim(name, claimName string) kubevirt.Volume {
	return kubevirt.Volume{Name: name, VolumeSource: kubevirt.VolumeSource{PersistentVolumeClaim: &kubevirt.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}
}

func renameVolume(s *kubevirt.VirtualMachineInstanceSpec, i int, name string) {
	s.Domain.Devices.Disks[i].Name = name
	s.Volumes[i].Name = name
}

// prefixed puts the spec's path in front of each error's path.
func prefixed(prefix string, want []wantErr) []wantErr {
	var out []wantErr
	for _, w := range want {
		out = append(out, wantErr{w.Type, prefix + w.Field})
	}
	return out
}

// TestBoundsApplyToEveryKind runs every bound through an instance, a VM's template and a
// replica set's template: the same errors, at the path of each.
func TestBoundsApplyToEveryKind(t *testing.T) {
	for _, tc := range boundCases {
		t.Run(tc.name, func(t *testing.T) {
			vmi := validVMI()
			tc.mutate(&vmi.Spec)
			assert.ElementsMatch(t, prefixed("spec.", tc.want), errsOf(ValidateVirtualMachineInstance(vmi)), "instance")

			vm := validVM()
			tc.mutate(&vm.Spec.Template.Spec)
			assert.ElementsMatch(t, prefixed("spec.template.spec.", tc.want), errsOf(ValidateVirtualMachine(vm)), "VM")

			rs := validReplicaSet()
			tc.mutate(&rs.Spec.Template.Spec)
			assert.ElementsMatch(t, prefixed("spec.template.spec.", tc.want), errsOf(ValidateVirtualMachineInstanceReplicaSet(rs)), "replica set")
		})
	}
}

// A stop with a grace period rewrites the instance's; it has the same bound.
func TestGracePeriodUpdateIsBounded(t *testing.T) {
	old := validVMI()
	shorter := old.DeepCopy()
	shorter.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	assert.Empty(t, ValidateVirtualMachineInstanceUpdate(shorter, old))

	huge := old.DeepCopy()
	huge.Spec.TerminationGracePeriodSeconds = ptr.To[int64](math.MaxInt64)
	assert.Equal(t, []wantErr{{field.ErrorTypeInvalid, "spec.terminationGracePeriodSeconds"}}, errsOf(ValidateVirtualMachineInstanceUpdate(huge, old)))
}
