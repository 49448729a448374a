package launcherpod

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation/podrules"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// initContainer is the part of an init container these tests pin down.
type initContainer struct {
	name    string
	image   string
	pull    corev1.PullPolicy
	command []string
	mounts  []corev1.VolumeMount
}

const helper = CopyHelperDir + "/hangar-copy"

var (
	installHelper = initContainer{
		name: CopyHelperContainer, image: "reg/launcher:v1", pull: corev1.PullIfNotPresent,
		command: []string{"/usr/bin/hangar-copy", "-install", "/var/run/hangar/bin"},
		mounts:  []corev1.VolumeMount{{Name: CopyHelperVolume, MountPath: "/var/run/hangar/bin"}},
	}
	helperMount = corev1.VolumeMount{Name: CopyHelperVolume, MountPath: "/var/run/hangar/bin", ReadOnly: true}
)

// launcherMounts are the compute container's mounts of the launcher's own volumes.
func launcherMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: layout.SocketVolume, MountPath: layout.SocketMountPath},
		{Name: layout.PrivateVolume, MountPath: layout.PrivateMountPath},
		{Name: layout.EphemeralVolume, MountPath: layout.EphemeralMountPath},
		{Name: layout.FDSetVolume, MountPath: layout.FDSetDir},
	}
}

// launcherVolumes are the launcher's own pod volumes, first in every launcher pod.
var launcherVolumes = []string{layout.SocketVolume, layout.PrivateVolume, layout.EphemeralVolume, layout.FDSetVolume}

func kernelBoot(c *v1.KernelBootContainer) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.Domain.Firmware = &v1.Firmware{KernelBoot: &v1.KernelBoot{Container: c}}
	}
}

func withVolumes(vols ...v1.Volume) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Volumes = vols }
}

func dataVolume(name, dv string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: dv}}}
}

func pvc(name, claim string, readOnly bool) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly},
	}}}
}

func containerDisk(name string, src v1.ContainerDiskSource) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ContainerDisk: &src}}
}

func TestBuildGuestFiles(t *testing.T) {
	tests := []struct {
		name        string
		vmi         func(*v1.VirtualMachineInstance)
		modes       VolumeModes
		imageVols   bool // the ImageVolume feature gate
		wantInit    []initContainer
		wantVolumes map[string]corev1.VolumeSource // besides the socket directory
		wantMounts  []corev1.VolumeMount           // of the compute container, besides the sockets
		wantDevices []corev1.VolumeDevice          // of the compute container
		wantSecrets []string
		wantErr     string
	}{
		{
			name: "no kernelBoot, containerDisk or claim: no init containers, no volumes",
		},
		{
			name: "kernelBoot: helper, then the image copies kernel and initrd to the kernel-boot directory",
			vmi: kernelBoot(&v1.KernelBootContainer{
				Image: "reg/kernel:v1", KernelPath: "/boot/vmlinux", InitrdPath: "/boot/initramfs.cpio.gz",
				ImagePullPolicy: corev1.PullAlways, ImagePullSecret: "regcred",
			}),
			wantInit: []initContainer{installHelper, {
				name: KernelBootContainer, image: "reg/kernel:v1", pull: corev1.PullAlways,
				command: []string{helper, "/var/run/hangar/kernel-boot", "/boot/vmlinux", "/boot/initramfs.cpio.gz"},
				mounts:  []corev1.VolumeMount{helperMount, {Name: KernelBootVolume, MountPath: "/var/run/hangar/kernel-boot"}},
			}},
			wantVolumes: map[string]corev1.VolumeSource{
				CopyHelperVolume: {EmptyDir: &corev1.EmptyDirVolumeSource{}},
				KernelBootVolume: {EmptyDir: &corev1.EmptyDirVolumeSource{}},
			},
			wantMounts:  []corev1.VolumeMount{{Name: KernelBootVolume, MountPath: "/var/run/hangar/kernel-boot", ReadOnly: true}},
			wantSecrets: []string{"regcred"},
		},
		{
			name: "kernelBoot without initrd copies the kernel only, pulling IfNotPresent",
			vmi:  kernelBoot(&v1.KernelBootContainer{Image: "reg/kernel:v1", KernelPath: "/vmlinuz"}),
			wantInit: []initContainer{installHelper, {
				name: KernelBootContainer, image: "reg/kernel:v1", pull: corev1.PullIfNotPresent,
				command: []string{helper, "/var/run/hangar/kernel-boot", "/vmlinuz"},
				mounts:  []corev1.VolumeMount{helperMount, {Name: KernelBootVolume, MountPath: "/var/run/hangar/kernel-boot"}},
			}},
			wantVolumes: map[string]corev1.VolumeSource{
				CopyHelperVolume: {EmptyDir: &corev1.EmptyDirVolumeSource{}},
				KernelBootVolume: {EmptyDir: &corev1.EmptyDirVolumeSource{}},
			},
			wantMounts: []corev1.VolumeMount{{Name: KernelBootVolume, MountPath: "/var/run/hangar/kernel-boot", ReadOnly: true}},
		},
		{
			name: "containerDisks: /disk, or the given path, under the volume's directory; one shared emptyDir",
			vmi: withVolumes(
				containerDisk("rootdisk", v1.ContainerDiskSource{Image: "reg/debian:12", ImagePullSecret: "regcred"}),
				containerDisk("data", v1.ContainerDiskSource{Image: "reg/data:1", Path: "/images/data.qcow2", ImagePullPolicy: corev1.PullNever, ImagePullSecret: "regcred"}),
			),
			wantInit: []initContainer{installHelper, {
				name: "container-disk-rootdisk", image: "reg/debian:12", pull: corev1.PullIfNotPresent,
				command: []string{helper, "/var/run/hangar/container-disks/rootdisk", "/disk"},
				mounts:  []corev1.VolumeMount{helperMount, {Name: ContainerDiskVolume, MountPath: "/var/run/hangar/container-disks"}},
			}, {
				name: "container-disk-data", image: "reg/data:1", pull: corev1.PullNever,
				command: []string{helper, "/var/run/hangar/container-disks/data", "/images/data.qcow2"},
				mounts:  []corev1.VolumeMount{helperMount, {Name: ContainerDiskVolume, MountPath: "/var/run/hangar/container-disks"}},
			}},
			wantVolumes: map[string]corev1.VolumeSource{
				CopyHelperVolume:    {EmptyDir: &corev1.EmptyDirVolumeSource{}},
				ContainerDiskVolume: {EmptyDir: &corev1.EmptyDirVolumeSource{}},
			},
			wantMounts:  []corev1.VolumeMount{{Name: ContainerDiskVolume, MountPath: "/var/run/hangar/container-disks", ReadOnly: true}},
			wantSecrets: []string{"regcred"},
		},
		{
			name: "a containerDisk name of 48 characters makes a 63-character init container name",
			vmi:  withVolumes(containerDisk("a-volume-name-of-exactly-forty-eight-characters0", v1.ContainerDiskSource{Image: "reg/d:1"})),
			wantInit: []initContainer{installHelper, {
				name: "container-disk-a-volume-name-of-exactly-forty-eight-characters0", image: "reg/d:1", pull: corev1.PullIfNotPresent,
				command: []string{helper, "/var/run/hangar/container-disks/a-volume-name-of-exactly-forty-eight-characters0", "/disk"},
				mounts:  []corev1.VolumeMount{helperMount, {Name: ContainerDiskVolume, MountPath: "/var/run/hangar/container-disks"}},
			}},
			wantVolumes: map[string]corev1.VolumeSource{
				CopyHelperVolume:    {EmptyDir: &corev1.EmptyDirVolumeSource{}},
				ContainerDiskVolume: {EmptyDir: &corev1.EmptyDirVolumeSource{}},
			},
			wantMounts: []corev1.VolumeMount{{Name: ContainerDiskVolume, MountPath: "/var/run/hangar/container-disks", ReadOnly: true}},
		},
		{
			// An index as a fallback name could equal another volume's derived name: a
			// volume named "0" has the init container container-disk-0. Validation refuses
			// the long name; the builder refuses it too rather than guess.
			name:    "a containerDisk name too long for a container name is an error",
			vmi:     withVolumes(containerDisk("a-volume-name-of-exactly-forty-nine-characters-01", v1.ContainerDiskSource{Image: "reg/d:1"})),
			wantErr: "longer than 48 characters",
		},
		{
			name:  "filesystem claims are mounted in the volume's vmi-disks directory, read-only when asked; no init containers",
			vmi:   withVolumes(pvc("rootdisk", "claim-a", false), pvc("iso", "claim-b", true)),
			modes: VolumeModes{"claim-a": corev1.PersistentVolumeFilesystem, "claim-b": corev1.PersistentVolumeFilesystem},
			wantVolumes: map[string]corev1.VolumeSource{
				"rootdisk": {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-a"}},
				"iso":      {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-b", ReadOnly: true}},
			},
			wantMounts: []corev1.VolumeMount{
				{Name: "rootdisk", MountPath: "/var/run/kubevirt-private/vmi-disks/rootdisk"},
				{Name: "iso", MountPath: "/var/run/kubevirt-private/vmi-disks/iso", ReadOnly: true},
			},
		},
		{
			name:  "block claims are devices at /dev/<volume>, not mounts; filesystem claims beside them stay mounts",
			vmi:   withVolumes(pvc("rootdisk", "claim-a", false), pvc("data", "claim-b", false), pvc("ro", "claim-c", true)),
			modes: VolumeModes{"claim-a": corev1.PersistentVolumeFilesystem, "claim-b": corev1.PersistentVolumeBlock, "claim-c": corev1.PersistentVolumeBlock},
			wantVolumes: map[string]corev1.VolumeSource{
				"rootdisk": {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-a"}},
				"data":     {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-b"}},
				"ro":       {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-c", ReadOnly: true}},
			},
			wantMounts:  []corev1.VolumeMount{{Name: "rootdisk", MountPath: "/var/run/kubevirt-private/vmi-disks/rootdisk"}},
			wantDevices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/data"}, {Name: "ro", DevicePath: "/dev/ro"}},
		},
		{
			name:  "a dataVolume volume is its DataVolume's claim, of the DataVolume's name, mounted or mapped as a claim is",
			vmi:   withVolumes(dataVolume("rootdisk", "root-dv"), dataVolume("data", "data-dv")),
			modes: VolumeModes{"root-dv": corev1.PersistentVolumeFilesystem, "data-dv": corev1.PersistentVolumeBlock},
			wantVolumes: map[string]corev1.VolumeSource{
				"rootdisk": {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "root-dv"}},
				"data":     {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-dv"}},
			},
			wantMounts:  []corev1.VolumeMount{{Name: "rootdisk", MountPath: "/var/run/kubevirt-private/vmi-disks/rootdisk"}},
			wantDevices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/data"}},
		},
		{
			name:        "a claim without a volumeMode is a filesystem (the API server's default)",
			vmi:         withVolumes(pvc("rootdisk", "claim-a", false)),
			modes:       VolumeModes{"claim-a": ""},
			wantVolumes: map[string]corev1.VolumeSource{"rootdisk": {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-a"}}},
			wantMounts:  []corev1.VolumeMount{{Name: "rootdisk", MountPath: "/var/run/kubevirt-private/vmi-disks/rootdisk"}},
		},
		{
			name:    "a claim whose mode the caller did not read is an error, not a guess",
			vmi:     withVolumes(pvc("rootdisk", "claim-a", false), pvc("data", "claim-b", false)),
			modes:   VolumeModes{"claim-a": corev1.PersistentVolumeFilesystem},
			wantErr: "the volumeMode of claim claim-b is unknown",
		},
		{
			name:    "an unknown volumeMode is an error",
			vmi:     withVolumes(pvc("data", "claim-b", false)),
			modes:   VolumeModes{"claim-b": "Tape"},
			wantErr: `volumeMode "Tape"`,
		},
		{
			name:    "a block volume may not shadow a device the launcher needs",
			vmi:     withVolumes(pvc("kvm", "claim-b", false)),
			modes:   VolumeModes{"claim-b": corev1.PersistentVolumeBlock},
			wantErr: "would shadow /dev/kvm",
		},
		{
			name:    "a claim may not take the name of a launcher volume",
			vmi:     withVolumes(pvc(layout.SocketVolume, "claim-a", false)),
			modes:   VolumeModes{"claim-a": corev1.PersistentVolumeFilesystem},
			wantErr: "reserved",
		},
		{
			name: "ImageVolume: the kernelBoot image is mounted where the copy would be, nothing is copied",
			vmi: kernelBoot(&v1.KernelBootContainer{
				Image: "reg/kernel:v1", KernelPath: "/boot/vmlinux", InitrdPath: "/boot/initramfs.cpio.gz",
				ImagePullPolicy: corev1.PullAlways, ImagePullSecret: "regcred",
			}),
			imageVols: true,
			wantVolumes: map[string]corev1.VolumeSource{
				KernelBootVolume: {Image: &corev1.ImageVolumeSource{Reference: "reg/kernel:v1", PullPolicy: corev1.PullAlways}},
			},
			wantMounts:  []corev1.VolumeMount{{Name: KernelBootVolume, MountPath: "/var/run/hangar/kernel-boot", ReadOnly: true}},
			wantSecrets: []string{"regcred"},
		},
		{
			name: "ImageVolume: each containerDisk is a read-only image volume of its name in its directory; claims beside them unchanged",
			vmi: withVolumes(
				containerDisk("rootdisk", v1.ContainerDiskSource{Image: "reg/debian:12", ImagePullSecret: "regcred"}),
				containerDisk("data", v1.ContainerDiskSource{Image: "reg/data:1", Path: "/images/data.qcow2", ImagePullPolicy: corev1.PullNever}),
				pvc("iso", "claim-b", true),
			),
			modes:     VolumeModes{"claim-b": corev1.PersistentVolumeFilesystem},
			imageVols: true,
			wantVolumes: map[string]corev1.VolumeSource{
				"rootdisk": {Image: &corev1.ImageVolumeSource{Reference: "reg/debian:12", PullPolicy: corev1.PullIfNotPresent}},
				"data":     {Image: &corev1.ImageVolumeSource{Reference: "reg/data:1", PullPolicy: corev1.PullNever}},
				"iso":      {PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-b", ReadOnly: true}},
			},
			wantMounts: []corev1.VolumeMount{
				{Name: "rootdisk", MountPath: "/var/run/hangar/container-disks/rootdisk", ReadOnly: true},
				{Name: "data", MountPath: "/var/run/hangar/container-disks/data", ReadOnly: true},
				{Name: "iso", MountPath: "/var/run/kubevirt-private/vmi-disks/iso", ReadOnly: true},
			},
			wantSecrets: []string{"regcred"},
		},
		{
			name:      "ImageVolume: a containerDisk may not take the name of a launcher volume",
			vmi:       withVolumes(containerDisk(layout.PrivateVolume, v1.ContainerDiskSource{Image: "reg/d:1"})),
			imageVols: true,
			wantErr:   "reserved",
		},
		{
			name:    "kernelBoot needs an image",
			vmi:     kernelBoot(&v1.KernelBootContainer{KernelPath: "/vmlinuz"}),
			wantErr: "no image",
		},
		{
			name:    "kernelBoot needs a file to copy",
			vmi:     kernelBoot(&v1.KernelBootContainer{Image: "reg/kernel:v1"}),
			wantErr: "neither kernelPath nor initrdPath",
		},
		{
			name:    "a containerDisk needs an image",
			vmi:     withVolumes(containerDisk("rootdisk", v1.ContainerDiskSource{})),
			wantErr: "no image",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := clusterconfig.Defaults()
			cfg.LauncherImage = "reg/launcher:v1"
			cfg.ImageVolumes = tt.imageVols
			pod, err := Build(testVMI(tt.vmi), tt.modes, &cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Empty(t, podrules.ValidatePod(pod), "the pod API would refuse this pod")
			spec := pod.Spec

			var gotInit []initContainer
			for _, c := range spec.InitContainers {
				if c.Name == layout.GuestConsoleLogContainer {
					continue // TestGuestConsoleLog
				}
				gotInit = append(gotInit, initContainer{name: c.Name, image: c.Image, pull: c.ImagePullPolicy, command: c.Command, mounts: c.VolumeMounts})
				sc := c.SecurityContext
				require.NotNil(t, sc, c.Name)
				assert.False(t, *sc.Privileged, c.Name)
				assert.False(t, *sc.AllowPrivilegeEscalation, c.Name)
				assert.True(t, *sc.RunAsNonRoot, c.Name)
				assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, c.Name)
				assert.Empty(t, sc.Capabilities.Add, c.Name)
				assertList(t, corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("40Mi")}, c.Resources.Requests, c.Name+" requests")
			}
			assert.Equal(t, tt.wantInit, gotInit)

			// The launcher's own volumes come first (TestBuild checks them).
			require.GreaterOrEqual(t, len(spec.Volumes), len(launcherVolumes))
			gotVolumes := map[string]corev1.VolumeSource{}
			for _, v := range spec.Volumes[len(launcherVolumes):] {
				gotVolumes[v.Name] = v.VolumeSource
			}
			if tt.wantVolumes == nil {
				tt.wantVolumes = map[string]corev1.VolumeSource{}
			}
			assert.Equal(t, tt.wantVolumes, gotVolumes)

			c := spec.Containers[0]
			assert.Equal(t, append(launcherMounts(), tt.wantMounts...), c.VolumeMounts)
			assert.Equal(t, tt.wantDevices, c.VolumeDevices)
			assert.False(t, *c.SecurityContext.Privileged)
			assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
			assert.False(t, spec.HostNetwork)

			var secrets []string
			for _, s := range spec.ImagePullSecrets {
				secrets = append(secrets, s.Name)
			}
			assert.Equal(t, tt.wantSecrets, secrets)
		})
	}
}

// A compute container with limits equal to its requests keeps the pod Guaranteed only if the
// init containers' limits equal their requests as well.
func TestCopyResourcesKeepGuaranteedQoS(t *testing.T) {
	cfg := clusterconfig.Defaults()
	pod, err := Build(testVMI(func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: q("1Gi"), corev1.ResourceCPU: q("1")}
		vmi.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q("1Gi"), corev1.ResourceCPU: q("1")}
		kernelBoot(&v1.KernelBootContainer{Image: "reg/kernel:v1", KernelPath: "/vmlinuz"})(vmi)
	}), nil, &cfg)
	require.NoError(t, err)
	require.True(t, isGuaranteed(pod.Spec.Containers[0].Resources))
	require.Len(t, pod.Spec.InitContainers, 3, "the copy helper, the kernel's copy and guest-console-log")
	for _, c := range pod.Spec.InitContainers {
		assert.True(t, isGuaranteed(c.Resources), c.Name)
	}
}

func TestClaimNames(t *testing.T) {
	vmi := testVMI(withVolumes(pvc("a", "claim-1", false), containerDisk("root", v1.ContainerDiskSource{Image: "i"}),
		pvc("b", "claim-2", false), pvc("c", "claim-1", true)))
	assert.Equal(t, []string{"claim-1", "claim-2"}, ClaimNames(vmi))
	vmi = testVMI(withVolumes(pvc("a", "claim-1", false), dataVolume("b", "dv-1"), dataVolume("c", "claim-1")))
	assert.Equal(t, []string{"claim-1", "dv-1"}, ClaimNames(vmi), "a DataVolume's claim has its name")
	assert.Empty(t, ClaimNames(testVMI(nil)))
}
