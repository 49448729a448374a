package validation

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/pkg/apis/kubevirt"
)

// validSpec is a defaulted guest that passes validation; each case breaks one thing.
func validSpec() kubevirt.VirtualMachineInstanceSpec {
	return kubevirt.VirtualMachineInstanceSpec{
		Domain: kubevirt.DomainSpec{
			Resources: kubevirt.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
			Memory:    &kubevirt.Memory{Guest: ptr.To(resource.MustParse("128Mi"))},
			CPU:       &kubevirt.CPU{Cores: 1, Sockets: 1, Threads: 1},
			Devices: kubevirt.Devices{
				Disks: []kubevirt.Disk{
					{Name: "root", DiskDevice: kubevirt.DiskDevice{Disk: &kubevirt.DiskTarget{Bus: kubevirt.DiskBusVirtio}}, BootOrder: ptr.To[uint](1)},
					{Name: "seed", DiskDevice: kubevirt.DiskDevice{CDRom: &kubevirt.CDRomTarget{Bus: kubevirt.DiskBusSATA, ReadOnly: ptr.To(true)}}},
				},
				Interfaces: []kubevirt.Interface{{Name: "default", Model: "virtio",
					InterfaceBindingMethod: kubevirt.InterfaceBindingMethod{Masquerade: &kubevirt.InterfaceMasquerade{}},
					Ports:                  []kubevirt.Port{{Name: "ssh", Protocol: "TCP", Port: 22}}}},
			},
		},
		Volumes: []kubevirt.Volume{
			{Name: "root", VolumeSource: kubevirt.VolumeSource{ContainerDisk: &kubevirt.ContainerDiskSource{Image: "example/disk"}}},
			{Name: "seed", VolumeSource: kubevirt.VolumeSource{CloudInitNoCloud: &kubevirt.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
		},
		Networks:                      []kubevirt.Network{{Name: "default", NetworkSource: kubevirt.NetworkSource{Pod: &kubevirt.PodNetwork{}}}},
		TerminationGracePeriodSeconds: ptr.To[int64](30),
	}
}

type wantErr struct {
	Type  field.ErrorType
	Field string
}

func errsOf(list field.ErrorList) []wantErr {
	var out []wantErr
	for _, e := range list {
		out = append(out, wantErr{e.Type, e.Field})
	}
	return out
}

func TestValidateVirtualMachineInstanceSpec(t *testing.T) {
	require.Empty(t, ValidateVirtualMachineInstanceSpec(ptr.To(validSpec()), field.NewPath("spec")), "the base spec must be valid")

	tests := []struct {
		name   string
		mutate func(s *kubevirt.VirtualMachineInstanceSpec)
		want   []wantErr
	}{
		{"disk without volume", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Disks[0].Name = "nope"
		}, []wantErr{{field.ErrorTypeNotFound, "spec.domain.devices.disks[0].name"}}},
		{"duplicate disk", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Disks[1].Name = "root"
			s.Domain.Devices.Disks[1].BootOrder = nil
		}, []wantErr{{field.ErrorTypeDuplicate, "spec.domain.devices.disks[1].name"}}},
		{"disk and cdrom at once", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Disks[0].CDRom = &kubevirt.CDRomTarget{}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.disks[0]"}}},
		{"unknown disk bus", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Disks[0].Disk.Bus = "ide"
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.domain.devices.disks[0].disk.bus"}}},
		{"writable cdrom", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Disks[1].CDRom.ReadOnly = ptr.To(false)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.disks[1].cdrom.readonly"}}},
		{"virtio cdrom", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Disks[1].CDRom.Bus = kubevirt.DiskBusVirtio
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.domain.devices.disks[1].cdrom.bus"}}},
		{"boot order zero", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Disks[0].BootOrder = ptr.To[uint](0)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.disks[0].bootOrder"}}},
		{"boot order shared by a disk and an interface", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Interfaces[0].BootOrder = ptr.To[uint](1)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.interfaces[0].bootOrder"}}},
		{"volume without source", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[0].ContainerDisk = nil
		}, []wantErr{{field.ErrorTypeInvalid, "spec.volumes[0]"}}},
		{"volume with two sources", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[0].EmptyDisk = &kubevirt.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.volumes[0]"}}},
		{"duplicate volume", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].Name = "root"
		}, []wantErr{{field.ErrorTypeDuplicate, "spec.volumes[1].name"}, {field.ErrorTypeNotFound, "spec.domain.devices.disks[1].name"}}},
		{"volume name not a DNS label", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[0].Name = "Root_Disk"
			s.Domain.Devices.Disks[0].Name = "Root_Disk"
		}, []wantErr{{field.ErrorTypeInvalid, "spec.volumes[0].name"}, {field.ErrorTypeInvalid, "spec.domain.devices.disks[0].name"}}},
		{"container disk without image", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[0].ContainerDisk.Image = ""
		}, []wantErr{{field.ErrorTypeRequired, "spec.volumes[0].containerDisk.image"}}},
		{"container disk path escaping the image", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[0].ContainerDisk.Path = "/disk/../../etc/shadow"
		}, []wantErr{{field.ErrorTypeInvalid, "spec.volumes[0].containerDisk.path"}}},
		{"empty disk of size zero", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[0].ContainerDisk = nil
			s.Volumes[0].EmptyDisk = &kubevirt.EmptyDiskSource{}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.volumes[0].emptyDisk.capacity"}}},
		{"claim without name", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[0].ContainerDisk = nil
			s.Volumes[0].PersistentVolumeClaim = &kubevirt.PersistentVolumeClaimVolumeSource{}
		}, []wantErr{{field.ErrorTypeRequired, "spec.volumes[0].persistentVolumeClaim.claimName"}}},
		{"cloud-init without data", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserData = ""
		}, []wantErr{{field.ErrorTypeRequired, "spec.volumes[1].cloudInitNoCloud"}}},
		{"cloud-init with two user data sources", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserDataBase64 = "I2Nsb3VkLWNvbmZpZwo="
		}, []wantErr{{field.ErrorTypeInvalid, "spec.volumes[1].cloudInitNoCloud"}}},
		{"cloud-init with broken base64", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserData = ""
			s.Volumes[1].CloudInitNoCloud.UserDataBase64 = "not base64!"
		}, []wantErr{{field.ErrorTypeInvalid, "spec.volumes[1].cloudInitNoCloud.userDataBase64"}}},
		{"cloud-init user data at KubeVirt's limit", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserData = strings.Repeat("#", MaxCloudInitUserData)
			s.Volumes[1].CloudInitNoCloud.NetworkDataBase64 = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("#", MaxCloudInitNetworkData)))
		}, nil},
		{"cloud-init user data past KubeVirt's limit", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserData = strings.Repeat("#", MaxCloudInitUserData+1)
		}, []wantErr{{field.ErrorTypeTooLong, "spec.volumes[1].cloudInitNoCloud.userData"}}},
		{"cloud-init base64 user data decoding past the limit", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserData = ""
			s.Volumes[1].CloudInitNoCloud.UserDataBase64 = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("#", MaxCloudInitUserData+1)))
		}, []wantErr{{field.ErrorTypeTooLong, "spec.volumes[1].cloudInitNoCloud.userDataBase64"}}},
		{"cloud-init base64 user data of megabytes, not decoded", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserData = ""
			s.Volumes[1].CloudInitNoCloud.UserDataBase64 = strings.Repeat("!", 1<<20)
		}, []wantErr{{field.ErrorTypeTooLong, "spec.volumes[1].cloudInitNoCloud.userDataBase64"}}},
		{"cloud-init network data past the limit", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.NetworkData = strings.Repeat("#", MaxCloudInitNetworkData+1)
		}, []wantErr{{field.ErrorTypeTooLong, "spec.volumes[1].cloudInitNoCloud.networkData"}}},
		{"more volumes than KubeVirt takes", func(s *kubevirt.VirtualMachineInstanceSpec) {
			for i := len(s.Volumes); i <= MaxDevices; i++ {
				s.Volumes = append(s.Volumes, kubevirt.Volume{Name: fmt.Sprintf("v%d", i),
					VolumeSource: kubevirt.VolumeSource{EmptyDisk: &kubevirt.EmptyDiskSource{Capacity: resource.MustParse("1Mi")}}})
			}
		}, []wantErr{{field.ErrorTypeTooMany, "spec.volumes"}}},
		{"more interfaces than KubeVirt takes", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Interfaces = make([]kubevirt.Interface, MaxDevices+1)
		}, []wantErr{{field.ErrorTypeTooMany, "spec.domain.devices.interfaces"}}},
		{"cloud-init from Secrets", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserData = ""
			s.Volumes[1].CloudInitNoCloud.UserDataSecretRef = &corev1.LocalObjectReference{Name: "seed"}
			s.Volumes[1].CloudInitNoCloud.NetworkDataSecretRef = &corev1.LocalObjectReference{Name: "seed.network"}
		}, nil},
		{"cloud-init Secrets without a name or with a path for one", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Volumes[1].CloudInitNoCloud.UserData = ""
			s.Volumes[1].CloudInitNoCloud.UserDataSecretRef = &corev1.LocalObjectReference{}
			s.Volumes[1].CloudInitNoCloud.NetworkDataSecretRef = &corev1.LocalObjectReference{Name: "../seed"}
		}, []wantErr{
			{field.ErrorTypeRequired, "spec.volumes[1].cloudInitNoCloud.secretRef.name"},
			{field.ErrorTypeInvalid, "spec.volumes[1].cloudInitNoCloud.networkDataSecretRef.name"},
		}},
		{"interface without network", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Networks[0].Name = "other"
		}, []wantErr{{field.ErrorTypeInvalid, "spec.networks[0].name"}, {field.ErrorTypeNotFound, "spec.domain.devices.interfaces[0].name"}}},
		{"duplicate interface", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Interfaces = append(s.Domain.Devices.Interfaces, s.Domain.Devices.Interfaces[0])
		}, []wantErr{{field.ErrorTypeDuplicate, "spec.domain.devices.interfaces[1].name"}}},
		{"two bindings", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Interfaces[0].Bridge = &kubevirt.InterfaceBridge{}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.interfaces[0]"}}},
		{"bridge with informational ports is valid", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Interfaces[0].Masquerade = nil
			s.Domain.Devices.Interfaces[0].Bridge = &kubevirt.InterfaceBridge{}
		}, nil},
		{"bad port on a bridge", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Interfaces[0].Masquerade = nil
			s.Domain.Devices.Interfaces[0].Bridge = &kubevirt.InterfaceBridge{}
			s.Domain.Devices.Interfaces[0].Ports[0].Port = 0
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.interfaces[0].ports[0].port"}}},
		{"port out of range and unknown protocol", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Interfaces[0].Ports[0] = kubevirt.Port{Port: 70000, Protocol: "SCTP"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.interfaces[0].ports[0].port"},
			{field.ErrorTypeNotSupported, "spec.domain.devices.interfaces[0].ports[0].protocol"}}},
		{"bad MAC", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Devices.Interfaces[0].MacAddress = "de:ad:be:ef"
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.devices.interfaces[0].macAddress"}}},
		{"network without source", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Networks[0].Pod = nil
		}, []wantErr{{field.ErrorTypeRequired, "spec.networks[0].pod"}}},
		{"two pod networks", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Networks = append(s.Networks, kubevirt.Network{Name: "second", NetworkSource: kubevirt.NetworkSource{Pod: &kubevirt.PodNetwork{}}})
			s.Domain.Devices.Interfaces = append(s.Domain.Devices.Interfaces, kubevirt.Interface{Name: "second",
				InterfaceBindingMethod: kubevirt.InterfaceBindingMethod{Bridge: &kubevirt.InterfaceBridge{}}})
		}, []wantErr{{field.ErrorTypeInvalid, "spec.networks[1].pod"}}},
		{"bad VM network CIDR", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Networks[0].Pod.VMNetworkCIDR = "10.0.2.0"
		}, []wantErr{{field.ErrorTypeInvalid, "spec.networks[0].pod.vmNetworkCIDR"}}},
		{"memory missing", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Memory = nil
		}, []wantErr{{field.ErrorTypeRequired, "spec.domain.memory.guest"}}},
		{"memory too small", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Memory.Guest = ptr.To(resource.MustParse("512Ki"))
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.memory.guest"}}},
		{"guest memory above the limit", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Resources.Requests = nil
			s.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.memory.guest"}}},
		{"request above limit", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
			s.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.resources.requests[cpu]"}}},
		{"zero sockets", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.CPU.Sockets = 0
		}, []wantErr{{field.ErrorTypeInvalid, "spec.domain.cpu.sockets"}}},
		{"kernel boot without paths", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware = &kubevirt.Firmware{KernelBoot: &kubevirt.KernelBoot{Container: &kubevirt.KernelBootContainer{Image: "k"}}}
		}, []wantErr{{field.ErrorTypeRequired, "spec.domain.firmware.kernelBoot.container.kernelPath"}}},
		{"kernel boot with an initrd alone (QEMU takes -initrd only with -kernel)", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware = &kubevirt.Firmware{KernelBoot: &kubevirt.KernelBoot{Container: &kubevirt.KernelBootContainer{Image: "k", InitrdPath: "/initrd"}}}
		}, []wantErr{{field.ErrorTypeRequired, "spec.domain.firmware.kernelBoot.container.kernelPath"}}},
		{"kernel args without a kernel", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware = &kubevirt.Firmware{KernelBoot: &kubevirt.KernelBoot{KernelArgs: "console=ttyS0"}}
		}, []wantErr{{field.ErrorTypeRequired, "spec.domain.firmware.kernelBoot.container"}}},
		{"relative kernel path and no image", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Domain.Firmware = &kubevirt.Firmware{KernelBoot: &kubevirt.KernelBoot{Container: &kubevirt.KernelBootContainer{KernelPath: "boot/vmlinux"}}}
		}, []wantErr{{field.ErrorTypeRequired, "spec.domain.firmware.kernelBoot.container.image"},
			{field.ErrorTypeInvalid, "spec.domain.firmware.kernelBoot.container.kernelPath"}}},
		{"bad hostname and subdomain", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Hostname, s.Subdomain = "My_Host", "a.b"
		}, []wantErr{{field.ErrorTypeInvalid, "spec.hostname"}, {field.ErrorTypeInvalid, "spec.subdomain"}}},
		{"negative grace period", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.TerminationGracePeriodSeconds = ptr.To[int64](-1)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.terminationGracePeriodSeconds"}}},
		{"unknown start strategy", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.StartStrategy = ptr.To(kubevirt.StartStrategy("Later"))
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.startStrategy"}}},
		{"unknown eviction strategy", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.EvictionStrategy = ptr.To(kubevirt.EvictionStrategy("Sometimes"))
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.evictionStrategy"}}},
		{"bad node selector", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.NodeSelector = map[string]string{"bad key!": "x"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.nodeSelector"}}},
		{"bad toleration", func(s *kubevirt.VirtualMachineInstanceSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Maybe", Effect: "Sometimes"}}
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.tolerations[0].operator"}, {field.ErrorTypeNotSupported, "spec.tolerations[0].effect"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := validSpec()
			tc.mutate(&spec)
			assert.ElementsMatch(t, tc.want, errsOf(ValidateVirtualMachineInstanceSpec(&spec, field.NewPath("spec"))))
		})
	}
}

func validVM() *kubevirt.VirtualMachine {
	return &kubevirt.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"},
		Spec: kubevirt.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirt.RunStrategyAlways),
			Template:    &kubevirt.VirtualMachineInstanceTemplateSpec{Spec: validSpec()},
		},
	}
}

func TestValidateVirtualMachine(t *testing.T) {
	require.Empty(t, ValidateVirtualMachine(validVM()))
	tests := []struct {
		name   string
		mutate func(vm *kubevirt.VirtualMachine)
		want   []wantErr
	}{
		{"running and runStrategy together", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.Running = ptr.To(true)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.running"}}},
		{"unknown run strategy", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.RunStrategy = ptr.To(kubevirt.VirtualMachineRunStrategy("Sometimes"))
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.runStrategy"}}},
		{"no template", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.Template = nil
		}, []wantErr{{field.ErrorTypeRequired, "spec.template"}}},
		{"template errors carry the template path", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory = nil
		}, []wantErr{{field.ErrorTypeRequired, "spec.template.spec.domain.memory.guest"}}},
		{"bad template label", func(vm *kubevirt.VirtualMachine) {
			vm.Spec.Template.ObjectMeta.Labels = map[string]string{"a": "not valid!"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.template.metadata.labels"}}},
		{"name not a DNS label", func(vm *kubevirt.VirtualMachine) {
			vm.Name = "my.vm"
		}, []wantErr{{field.ErrorTypeInvalid, "metadata.name"}}},
		{"no namespace", func(vm *kubevirt.VirtualMachine) {
			vm.Namespace = ""
		}, []wantErr{{field.ErrorTypeRequired, "metadata.namespace"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm := validVM()
			tc.mutate(vm)
			assert.ElementsMatch(t, tc.want, errsOf(ValidateVirtualMachine(vm)))
		})
	}
}

func TestValidateVirtualMachineStatusUpdate(t *testing.T) {
	old := validVM()
	old.ResourceVersion = "1"
	vm := old.DeepCopy()
	vm.Status.StateChangeRequests = []kubevirt.VirtualMachineStateChangeRequest{{Action: kubevirt.StartRequest}, {Action: "Reboot"}}
	vm.Status.Conditions = []kubevirt.VirtualMachineCondition{{Type: kubevirt.VirtualMachineReady, Status: "Yes"}}
	assert.ElementsMatch(t, []wantErr{
		{field.ErrorTypeNotSupported, "status.stateChangeRequests[1].action"},
		{field.ErrorTypeNotSupported, "status.conditions[0].status"},
	}, errsOf(ValidateVirtualMachineStatusUpdate(vm, old)))
}

func validVMI() *kubevirt.VirtualMachineInstance {
	return &kubevirt.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vmi", Namespace: "ns", ResourceVersion: "1"},
		Spec:       validSpec(),
	}
}

func TestValidateVirtualMachineInstanceUpdate(t *testing.T) {
	old := validVMI()
	require.Empty(t, ValidateVirtualMachineInstance(old))

	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	assert.Empty(t, ValidateVirtualMachineInstanceUpdate(relabelled, old), "metadata may change")

	resized := old.DeepCopy()
	resized.Spec.Domain.CPU.Cores = 4
	assert.Equal(t, []wantErr{{field.ErrorTypeForbidden, "spec"}}, errsOf(ValidateVirtualMachineInstanceUpdate(resized, old)))
}

func TestValidateVirtualMachineInstanceStatusUpdate(t *testing.T) {
	tests := []struct {
		name     string
		oldPhase kubevirt.VirtualMachineInstancePhase
		newPhase kubevirt.VirtualMachineInstancePhase
		want     []wantErr
	}{
		{"forward", kubevirt.Scheduled, kubevirt.Running, nil},
		{"unknown phase", kubevirt.Running, "Sleeping", []wantErr{{field.ErrorTypeNotSupported, "status.phase"}}},
		{"leaving Failed", kubevirt.Failed, kubevirt.Running, []wantErr{{field.ErrorTypeForbidden, "status.phase"}}},
		{"leaving Succeeded", kubevirt.Succeeded, kubevirt.Pending, []wantErr{{field.ErrorTypeForbidden, "status.phase"}}},
		{"staying Failed", kubevirt.Failed, kubevirt.Failed, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validVMI()
			old.Status.Phase = tc.oldPhase
			vmi := old.DeepCopy()
			vmi.Status.Phase = tc.newPhase
			assert.ElementsMatch(t, tc.want, errsOf(ValidateVirtualMachineInstanceStatusUpdate(vmi, old)))
		})
	}
}

func validReplicaSet() *kubevirt.VirtualMachineInstanceReplicaSet {
	return &kubevirt.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns"},
		Spec: kubevirt.VirtualMachineInstanceReplicaSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &kubevirt.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       validSpec(),
			},
		},
	}
}

func TestValidateVirtualMachineInstanceReplicaSet(t *testing.T) {
	require.Empty(t, ValidateVirtualMachineInstanceReplicaSet(validReplicaSet()))
	tests := []struct {
		name   string
		mutate func(rs *kubevirt.VirtualMachineInstanceReplicaSet)
		want   []wantErr
	}{
		{"negative replicas", func(rs *kubevirt.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Replicas = ptr.To[int32](-1)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.replicas"}}},
		{"selector not matching the template", func(rs *kubevirt.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Template.ObjectMeta.Labels = map[string]string{"app": "db"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.template.metadata.labels"}}},
		{"no selector", func(rs *kubevirt.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Selector = nil
		}, []wantErr{{field.ErrorTypeRequired, "spec.selector"}}},
		{"empty selector", func(rs *kubevirt.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Selector = &metav1.LabelSelector{}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.selector"}}},
		{"bad selector operator", func(rs *kubevirt.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.selector.matchExpressions[0].operator"}}},
		{"no template", func(rs *kubevirt.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Template = nil
		}, []wantErr{{field.ErrorTypeRequired, "spec.template"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := validReplicaSet()
			tc.mutate(rs)
			assert.ElementsMatch(t, tc.want, errsOf(ValidateVirtualMachineInstanceReplicaSet(rs)))
		})
	}
}

func TestValidateReplicaSetStatusUpdate(t *testing.T) {
	old := validReplicaSet()
	old.ResourceVersion = "1"
	rs := old.DeepCopy()
	rs.Status.Replicas, rs.Status.ReadyReplicas = 1, 2
	assert.Equal(t, []wantErr{{field.ErrorTypeInvalid, "status.readyReplicas"}},
		errsOf(ValidateVirtualMachineInstanceReplicaSetStatusUpdate(rs, old)))
}
