package domain

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// testVMI is a defaulted instance (as virt-api stores it) with 128Mi and the mutations applied
// before defaulting.
func testVMI(mutate ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guest", UID: "6a1d3c9e-0000-4000-8000-000000000001"},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
		}},
	}
	for _, m := range mutate {
		m(vmi)
	}
	v1.DefaultVirtualMachineInstanceSpec(&vmi.Spec)
	return vmi
}

func testOptions() Options {
	return Options{
		UseEmulation:   true,
		Layout:         DefaultLayout("/run/hangar"),
		KernelBootRoot: "/images/kernel",
		ContainerDisks: map[string]Image{"root": {Path: "/images/root/disk/debian.qcow2", Format: "qcow2"}},
		BlockVolumes:   map[string]bool{"blockpvc": true},
		Taps:           map[string]string{"default": "tap0"},
	}
}

func withKernelBoot(vmi *v1.VirtualMachineInstance) {
	vmi.Spec.Domain.Firmware = &v1.Firmware{KernelBoot: &v1.KernelBoot{
		KernelArgs: "console=ttyS0 quiet",
		Container:  &v1.KernelBootContainer{Image: "k", KernelPath: "/boot/vmlinux", InitrdPath: "/boot/../boot/initramfs.cpio.gz"},
	}}
}

func withAllVolumes(vmi *v1.VirtualMachineInstance) {
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{
		{Name: "root", BootOrder: ptr.To[uint](1)},
		{Name: "cidata", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{}}},
		{Name: "scratch", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA}}},
		{Name: "data", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI, ReadOnly: true}}, Serial: "D1"},
	}
	vmi.Spec.Volumes = []v1.Volume{
		{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "img"}}},
		{Name: "cidata", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}},
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}}},
		{Name: "blockpvc", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}}},
	}
}
