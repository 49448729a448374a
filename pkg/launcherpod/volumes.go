package launcherpod

import (
	"fmt"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Where the launcher (pkg/launcher, cmd/virt-launcher's defaults and domain.DefaultLayout)
// looks for the guest's files inside the compute container.
const (
	// KernelBootMountPath holds the kernelBoot image's files at their paths in the image:
	// the kernel at <KernelBootMountPath>/<kernelPath>.
	KernelBootMountPath = layout.KernelBootMountPath
	// ContainerDiskMountPath holds, per containerDisk volume, <path>/<volume>/ with the image's
	// files at their paths in the image: <volume>/disk/<file>, or <volume>/<containerDisk.path>.
	ContainerDiskMountPath = layout.ContainerDiskMountPath
	// PVCMountDir holds one directory per filesystem persistentVolumeClaim volume, with the
	// guest's image at <PVCMountDir>/<volume>/disk.img, as in KubeVirt.
	PVCMountDir = layout.PVCMountDir
	// BlockDeviceDir holds the device of each block persistentVolumeClaim volume as
	// <BlockDeviceDir>/<volume>, KubeVirt's devicePath.
	BlockDeviceDir = layout.BlockDeviceDir
)

// VolumeModes are the volumeModes of the claims an instance's persistentVolumeClaim volumes
// name, by claim name. The mode decides between a mount and a device, and a pod cannot change
// after it is created: the caller reads the claims first.
type VolumeModes map[string]corev1.PersistentVolumeMode

// ClaimNames are the claims the instance's persistentVolumeClaim and dataVolume volumes name
// (a DataVolume's claim has its name), each once.
func ClaimNames(vmi *v1.VirtualMachineInstance) []string {
	var names []string
	for _, vol := range vmi.Spec.Volumes {
		claim := vol.ClaimSource()
		if claim == nil {
			continue
		}
		if n := claim.ClaimName; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if n := StateClaimName(vmi); vmi.Spec.NeedsStateClaim() && !slices.Contains(names, n) {
		names = append(names, n)
	}
	return names
}

// The copy helper: kernelBoot and containerDisk images may have no shell and no cp, so a
// first init container puts the launcher image's static hangar-copy (cmd/hangar-copy) into an
// emptyDir, and one init container per image runs it from there.
const (
	// CopyHelperImagePath is hangar-copy in the virt-launcher image.
	CopyHelperImagePath = "/usr/bin/hangar-copy"
	// CopyHelperDir is where the init containers mount the helper's emptyDir.
	CopyHelperDir = "/var/run/hangar/bin"
	// CopyHelperContainer is the init container that installs the helper.
	CopyHelperContainer = layout.CopyHelperContainer
	// KernelBootContainer is the init container that copies the kernelBoot image's files.
	KernelBootContainer = layout.KernelBootContainer
	// ContainerDiskContainerPrefix starts the name of a containerDisk's init container.
	ContainerDiskContainerPrefix = layout.ContainerDiskContainerPrefix
)

// Pod volumes of the launcher's own; persistentVolumeClaim volumes are named as the
// instance's volumes are (as in KubeVirt), so an instance volume may not take these names
// (layout.IsReservedPodVolume), nor any starting with SecretVolumePrefix.
const (
	CopyHelperVolume    = layout.CopyHelperVolume
	KernelBootVolume    = layout.KernelBootVolume
	ContainerDiskVolume = layout.ContainerDiskVolume
)

// copyUser is the user the copying init containers run as: KubeVirt's qemu user, whose
// containerDisk images are made readable to (KubeVirt documents chown 107:107).
const copyUser int64 = layout.LauncherUID

// guestFiles is what the instance's storage and kernel adds to the launcher pod.
type guestFiles struct {
	initContainers []corev1.Container
	volumes        []corev1.Volume
	mounts         []corev1.VolumeMount  // of the compute container
	devices        []corev1.VolumeDevice // of the compute container
	pullSecrets    []corev1.LocalObjectReference
}

// buildGuestFiles makes the init containers, volumes and compute mounts that bring the
// kernelBoot image's files, the containerDisks, the persistentVolumeClaims and the cloud-init
// Secrets (secrets.go) to the launcher;
// modes must hold the volumeMode of every claim the instance names. With imageVolumes the
// kernelBoot and containerDisk images are mounted as image volumes (read-only, the image's
// files at their paths in the image, as the copies lay them out) and nothing is copied: the
// kubelet has them ready before the compute container starts, and no init container runs.
func buildGuestFiles(vmi *v1.VirtualMachineInstance, modes VolumeModes, launcherImage string, guaranteed, imageVolumes bool) (guestFiles, error) {
	var g guestFiles
	var copies []corev1.Container
	containerDisks := false
	addSecret := func(name string) {
		if name == "" {
			return
		}
		for _, s := range g.pullSecrets {
			if s.Name == name {
				return
			}
		}
		g.pullSecrets = append(g.pullSecrets, corev1.LocalObjectReference{Name: name})
	}

	if fw := vmi.Spec.Domain.Firmware; fw != nil && fw.KernelBoot != nil && fw.KernelBoot.Container != nil {
		kb := fw.KernelBoot.Container
		if kb.Image == "" {
			return g, fmt.Errorf("instance %s/%s: kernelBoot container has no image", vmi.Namespace, vmi.Name)
		}
		var files []string
		for _, p := range []string{kb.KernelPath, kb.InitrdPath} {
			if p != "" {
				files = append(files, p)
			}
		}
		if len(files) == 0 {
			return g, fmt.Errorf("instance %s/%s: kernelBoot container has neither kernelPath nor initrdPath", vmi.Namespace, vmi.Name)
		}
		if imageVolumes {
			g.volumes = append(g.volumes, imageVolume(KernelBootVolume, kb.Image, kb.ImagePullPolicy))
		} else {
			copies = append(copies, copyContainer(KernelBootContainer, kb.Image, kb.ImagePullPolicy, KernelBootVolume, KernelBootMountPath, KernelBootMountPath, files, guaranteed))
			g.volumes = append(g.volumes, emptyDir(KernelBootVolume))
		}
		g.mounts = append(g.mounts, corev1.VolumeMount{Name: KernelBootVolume, MountPath: KernelBootMountPath, ReadOnly: true})
		addSecret(kb.ImagePullSecret)
	}

	for _, vol := range vmi.Spec.Volumes {
		switch {
		case vol.ContainerDisk != nil:
			cd := vol.ContainerDisk
			if cd.Image == "" {
				return g, fmt.Errorf("instance %s/%s: containerDisk %s has no image", vmi.Namespace, vmi.Name, vol.Name)
			}
			src := "/disk" // KubeVirt's layout: the one file under /disk
			if cd.Path != "" {
				src = cd.Path
			}
			// Validation keeps these names DNS labels and unique; an index as a fallback
			// could equal another volume's derived name ("container-disk-0").
			if len(vol.Name) > layout.MaxContainerDiskVolumeName {
				return g, fmt.Errorf("instance %s/%s: containerDisk volume name %s is longer than %d characters: its init container name would not be a DNS label",
					vmi.Namespace, vmi.Name, vol.Name, layout.MaxContainerDiskVolumeName)
			}
			dest := path.Join(ContainerDiskMountPath, path.Clean("/"+vol.Name))
			addSecret(cd.ImagePullSecret)
			if imageVolumes {
				// The pod volume takes the instance volume's name, unique among them, as a
				// claim's does; validation keeps the launcher's own names free.
				if layout.IsReservedPodVolume(vol.Name) {
					return g, fmt.Errorf("instance %s/%s: volume name %q is reserved for the launcher pod", vmi.Namespace, vmi.Name, vol.Name)
				}
				g.volumes = append(g.volumes, imageVolume(vol.Name, cd.Image, cd.ImagePullPolicy))
				g.mounts = append(g.mounts, corev1.VolumeMount{Name: vol.Name, MountPath: dest, ReadOnly: true})
				continue
			}
			name := layout.ContainerDiskContainer(vol.Name)
			copies = append(copies, copyContainer(name, cd.Image, cd.ImagePullPolicy, ContainerDiskVolume, ContainerDiskMountPath, dest, []string{src}, guaranteed))
			containerDisks = true
		case vol.ClaimSource() != nil: // a persistentVolumeClaim, or a dataVolume's claim
			if layout.IsReservedPodVolume(vol.Name) {
				return g, fmt.Errorf("instance %s/%s: volume name %q is reserved for the launcher pod", vmi.Namespace, vmi.Name, vol.Name)
			}
			claim := *vol.ClaimSource()
			mode, ok := modes[claim.ClaimName]
			if !ok {
				return g, fmt.Errorf("instance %s/%s: volume %s: the volumeMode of claim %s is unknown", vmi.Namespace, vmi.Name, vol.Name, claim.ClaimName)
			}
			g.volumes = append(g.volumes, corev1.Volume{
				Name:         vol.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: claim.DeepCopy()},
			})
			switch mode {
			case corev1.PersistentVolumeBlock:
				if layout.ShadowsContainerDevice(vol.Name) {
					return g, fmt.Errorf("instance %s/%s: block volume %s would shadow %s/%s in the launcher", vmi.Namespace, vmi.Name, vol.Name, BlockDeviceDir, vol.Name)
				}
				g.devices = append(g.devices, corev1.VolumeDevice{Name: vol.Name, DevicePath: path.Join(BlockDeviceDir, vol.Name)})
			case corev1.PersistentVolumeFilesystem, "": // the API server defaults an unset mode to Filesystem
				g.mounts = append(g.mounts, corev1.VolumeMount{
					Name:      vol.Name,
					MountPath: path.Join(PVCMountDir, vol.Name),
					ReadOnly:  claim.ReadOnly,
				})
			default:
				return g, fmt.Errorf("instance %s/%s: volume %s: claim %s has volumeMode %q", vmi.Namespace, vmi.Name, vol.Name, claim.ClaimName, mode)
			}
		}
	}
	secretVolumes, secretMounts, err := cloudInitSecrets(vmi)
	if err != nil {
		return g, err
	}
	g.volumes = append(g.volumes, secretVolumes...)
	g.mounts = append(g.mounts, secretMounts...)
	if containerDisks {
		g.volumes = append(g.volumes, emptyDir(ContainerDiskVolume))
		g.mounts = append(g.mounts, corev1.VolumeMount{Name: ContainerDiskVolume, MountPath: ContainerDiskMountPath, ReadOnly: true})
	}

	if len(copies) > 0 {
		install := corev1.Container{
			Name:            CopyHelperContainer,
			Image:           launcherImage,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{CopyHelperImagePath, "-install", CopyHelperDir},
			Resources:       copyResources(guaranteed),
			SecurityContext: copySecurityContext(),
			VolumeMounts:    []corev1.VolumeMount{{Name: CopyHelperVolume, MountPath: CopyHelperDir}},
		}
		g.initContainers = append([]corev1.Container{install}, copies...)
		g.volumes = append([]corev1.Volume{emptyDir(CopyHelperVolume)}, g.volumes...)
	}
	return g, nil
}

// copyContainer is an init container that runs image with the copy helper and copies the
// image's files to dest, below the emptyDir volume mounted at mountPath.
func copyContainer(name, image string, pull corev1.PullPolicy, volume, mountPath, dest string, files []string, guaranteed bool) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           image,
		ImagePullPolicy: pullPolicy(pull),
		Command:         append([]string{path.Join(CopyHelperDir, "hangar-copy"), dest}, files...),
		Resources:       copyResources(guaranteed),
		SecurityContext: copySecurityContext(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: CopyHelperVolume, MountPath: CopyHelperDir, ReadOnly: true},
			{Name: volume, MountPath: mountPath},
		},
	}
}

// copySecurityContext: the copies need no privilege at all, and write only to their volume.
func copySecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsUser:                ptr.To(copyUser),
		RunAsGroup:               ptr.To(copyUser),
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// copyResources keeps the copies small. A guaranteed compute container keeps the pod in the
// Guaranteed QoS class only if every init container's limits equal its requests too.
func copyResources(guaranteed bool) corev1.ResourceRequirements {
	if guaranteed {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("40Mi")}
		return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("40Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("40Mi")},
	}
}

// isGuaranteed reports whether r sets limits equal to requests for CPU and memory.
func isGuaranteed(r corev1.ResourceRequirements) bool {
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, ok1 := r.Requests[n]
		lim, ok2 := r.Limits[n]
		if !ok1 || !ok2 || req.Cmp(lim) != 0 {
			return false
		}
	}
	return true
}

// imageVolume mounts image's root file system, read-only (Kubernetes' ImageVolume).
func imageVolume(name, image string, pull corev1.PullPolicy) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: pullPolicy(pull)}}}
}

// pullPolicy is the spec's pull policy of a kernelBoot or containerDisk image, IfNotPresent
// when unset (KubeVirt's default for them, whatever the tag).
func pullPolicy(p corev1.PullPolicy) corev1.PullPolicy {
	if p == "" {
		return corev1.PullIfNotPresent
	}
	return p
}

func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}
