// Package launcherpod turns a VirtualMachineInstance into the pod that runs it: the
// virt-launcher container, sized for the guest plus the virtualization overhead, scheduled
// where the instance asks, with the socket directory virt-handler talks to it through, and
// with the guest's files: kernelBoot and containerDisk images copied in by init containers,
// persistentVolumeClaims mounted or, for block claims, given as devices (volumes.go).
package launcherpod

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Grace periods of the launcher pod.
const (
	// GracePeriodMargin is added to the instance's grace period: the guest gets the instance's
	// grace period to power off, the launcher a little more to report and clean up.
	GracePeriodMargin int64 = 15
	// DefaultGracePeriodSeconds is the instance grace period when the spec has none.
	DefaultGracePeriodSeconds int64 = 30
)

// GenerateName is the prefix of a launcher pod's name; the API server appends 5 characters.
func GenerateName(vmi *v1.VirtualMachineInstance) string {
	return "virt-launcher-" + vmi.Name + "-"
}

// Resources is the compute container's requests and limits.
func Resources(vmi *v1.VirtualMachineInstance, cfg *clusterconfig.ClusterConfig) (corev1.ResourceRequirements, error) {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	spec := vmi.Spec.Domain.Resources

	guest, ok := vmi.Spec.Domain.GuestMemory()
	if !ok {
		return r, fmt.Errorf("instance %s/%s has no memory size", vmi.Namespace, vmi.Name)
	}
	overhead := MemoryOverhead(vmi, guest, cfg.MemoryOverhead)
	request := guest.DeepCopy()
	if !spec.OvercommitGuestOverhead {
		request.Add(overhead)
	}
	r.Requests[corev1.ResourceMemory] = request
	if limit, ok := spec.Limits[corev1.ResourceMemory]; ok {
		// The limit always has the overhead: overcommitting it may only cost the node.
		limit = limit.DeepCopy()
		limit.Add(overhead)
		r.Limits[corev1.ResourceMemory] = limit
	}

	limit, hasLimit := spec.Limits[corev1.ResourceCPU]
	if q, ok := spec.Requests[corev1.ResourceCPU]; ok {
		r.Requests[corev1.ResourceCPU] = q.DeepCopy()
	} else {
		// As KubeVirt: without an explicit request every vCPU asks for 1/ratio of a CPU, but
		// never more than the limit: the pod API refuses a request above its limit (4 vCPUs
		// under a 100m limit would ask for 400m).
		ratio := int64(cfg.CPUAllocationRatio)
		if ratio < 1 {
			ratio = 1
		}
		vcpus := min(vmi.Spec.Domain.VCPUs(), math.MaxInt64/1000)
		request := *resource.NewMilliQuantity(vcpus*1000/ratio, resource.DecimalSI)
		if hasLimit && request.Cmp(limit) > 0 {
			request = limit.DeepCopy()
		}
		r.Requests[corev1.ResourceCPU] = request
	}
	if hasLimit {
		r.Limits[corev1.ResourceCPU] = limit.DeepCopy()
	}

	if !cfg.UseEmulation {
		// Extended resources must be requested and limited alike.
		r.Requests[layout.KVMResource] = resource.MustParse("1")
		r.Limits[layout.KVMResource] = resource.MustParse("1")
	}
	if len(vmi.Spec.Domain.Devices.Interfaces) > 0 {
		r.Requests[layout.TunResource] = resource.MustParse("1")
		r.Limits[layout.TunResource] = resource.MustParse("1")
	}
	if len(r.Limits) == 0 {
		r.Limits = nil
	}
	return r, nil
}

// Build returns the launcher pod of vmi under the configuration cfg; modes holds the
// volumeMode of each claim the instance names (see ClaimNames).
func Build(vmi *v1.VirtualMachineInstance, modes VolumeModes, cfg *clusterconfig.ClusterConfig) (*corev1.Pod, error) {
	res, err := Resources(vmi, cfg)
	if err != nil {
		return nil, err
	}

	files, err := buildGuestFiles(vmi, modes, cfg.LauncherImage, isGuaranteed(res), cfg.ImageVolumes)
	if err != nil {
		return nil, err
	}
	stateVol, stateMount, stateArg, err := stateClaim(vmi, modes)
	if err != nil {
		return nil, err
	}

	labels := map[string]string{}
	for k, v := range vmi.Labels {
		labels[k] = v // so Services and NetworkPolicies can select the instance's pod
	}
	labels[v1.AppLabel] = v1.LauncherAppLabelValue
	labels[v1.CreatedByLabel] = string(vmi.UID)

	grace := DefaultGracePeriodSeconds
	if vmi.Spec.TerminationGracePeriodSeconds != nil {
		grace = *vmi.Spec.TerminationGracePeriodSeconds
	}

	hostname := layout.Hostname(vmi.Name, vmi.Spec.Hostname)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: GenerateName(vmi),
			Namespace:    vmi.Namespace,
			Labels:       labels,
			Annotations:  map[string]string{layout.DomainAnnotation: vmi.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1.SchemeGroupVersion.String(),
				Kind:               "VirtualMachineInstance",
				Name:               vmi.Name,
				UID:                vmi.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To(grace + GracePeriodMargin),
			// The launcher talks to virt-handler only, never to the API server.
			AutomountServiceAccountToken: ptr.To(false),
			// The pod's pause container is then PID 1 and reaps the processes libvirt
			// daemonizes (QEMU), so virt-launcher starts once, not as its own init plus a
			// child (cmd/virt-launcher/app/init.go): a launcher is a large, dynamically linked
			// program, and every pod paid for loading it twice.
			ShareProcessNamespace: ptr.To(true),
			Hostname:              hostname,
			Subdomain:             vmi.Spec.Subdomain,
			NodeSelector:          copyMap(vmi.Spec.NodeSelector),
			Affinity:              vmi.Spec.Affinity.DeepCopy(),
			Tolerations:           copyTolerations(vmi.Spec.Tolerations),
			SchedulerName:         vmi.Spec.SchedulerName,
			PriorityClassName:     vmi.Spec.PriorityClassName,
			ImagePullSecrets:      files.pullSecrets,
			InitContainers:        append(files.initContainers, guestConsoleLog(vmi, cfg.LauncherImage, res)...),
			SecurityContext:       podSecurityContext(),
			Containers: []corev1.Container{{
				Name:            layout.ComputeContainer,
				Image:           cfg.LauncherImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Env: []corev1.EnvVar{
					{Name: layout.EnvNamespace, Value: vmi.Namespace},
					{Name: layout.EnvName, Value: vmi.Name},
					{Name: layout.EnvUID, Value: string(vmi.UID)},
					{Name: layout.EnvSocketDir, Value: layout.SocketMountPath},
					{Name: layout.EnvEmulation, Value: fmt.Sprint(cfg.UseEmulation)},
				},
				Args: []string{
					"--state-dir=" + layout.StateDir,
					"--run-dir=" + layout.RunDir,
					"--ephemeral-dir=" + layout.EphemeralMountPath,
				},
				Resources:       res,
				SecurityContext: containerSecurityContext(),
				VolumeMounts: append([]corev1.VolumeMount{
					{Name: layout.SocketVolume, MountPath: layout.SocketMountPath},
					{Name: layout.PrivateVolume, MountPath: layout.PrivateMountPath},
					{Name: layout.EphemeralVolume, MountPath: layout.EphemeralMountPath},
					{Name: layout.FDSetVolume, MountPath: layout.FDSetDir},
				}, files.mounts...),
				VolumeDevices: files.devices,
			}},
			Volumes: append([]corev1.Volume{
				sizedEmptyDir(layout.SocketVolume, socketVolumeSize),
				sizedEmptyDir(layout.PrivateVolume, privateVolumeSize),
				ephemeralVolume(vmi),
				sizedEmptyDir(layout.FDSetVolume, fdSetVolumeSize),
			}, files.volumes...),
		},
	}
	if stateVol != nil {
		c := &pod.Spec.Containers[0]
		c.Args = append(c.Args, stateArg)
		c.VolumeMounts = append(c.VolumeMounts, *stateMount)
		pod.Spec.Volumes = append(pod.Spec.Volumes, *stateVol)
	}
	if tmpVol, tmpMount := tpmTmp(vmi); tmpVol != nil {
		c := &pod.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, *tmpMount)
		pod.Spec.Volumes = append(pod.Spec.Volumes, *tmpVol)
	}
	return pod, nil
}

// consoleLogResources are the guest-console-log container's: it copies a file that grows at
// the speed of a serial line. Each limit equals its request, so any LimitRange's
// maxLimitRequestRatio admits them and a Guaranteed pod stays Guaranteed. Memory (KubeVirt's
// limit for its virt-tail container; the follower here is virt-launcher, a larger program) is
// always limited; CPU only when the compute container's is, so that a quota on limits.cpu
// finds a limit in every container without the sidecar adding one nobody asked for.
func consoleLogResources(compute corev1.ResourceRequirements) corev1.ResourceRequirements {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("60Mi")}
	limits := corev1.ResourceList{corev1.ResourceMemory: requests[corev1.ResourceMemory].DeepCopy()}
	if _, ok := compute.Limits[corev1.ResourceCPU]; ok {
		limits[corev1.ResourceCPU] = requests[corev1.ResourceCPU].DeepCopy()
	}
	return corev1.ResourceRequirements{Requests: requests, Limits: limits}
}

// guestConsoleLog is the sidecar that follows the guest's serial console log (the launcher's
// virt-launcher --follow-console-log) to its standard output, where the kubelet keeps it,
// rotated, as the container's log: KubeVirt's guest-console-log. A restartable init
// container, so the pod still ends when the compute container does. It reads the private
// volume, read-only; under the pod's user and the compute container's restrictions. None
// when the guest has no serial console (autoattachSerialConsole: false).
func guestConsoleLog(vmi *v1.VirtualMachineInstance, image string, compute corev1.ResourceRequirements) []corev1.Container {
	if a := vmi.Spec.Domain.Devices.AutoattachSerialConsole; a != nil && !*a {
		return nil
	}
	res := consoleLogResources(compute)
	return []corev1.Container{{
		Name:            layout.GuestConsoleLogContainer,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            []string{"--follow-console-log=" + layout.RunDir + "/" + layout.ConsoleLogName},
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources:       res,
		SecurityContext: containerSecurityContext(),
		VolumeMounts:    []corev1.VolumeMount{{Name: layout.PrivateVolume, MountPath: layout.PrivateMountPath, ReadOnly: true}},
	}}
}

// A launcher pod meets Pod Security "restricted": it runs as KubeVirt's unprivileged qemu user
// with no capabilities, no privilege escalation, the runtime's default seccomp profile and a
// read-only root file system. What the guest needs beyond that comes from outside: /dev/kvm
// and /dev/net/tun from virt-handler's device plugins, the taps from virt-handler, which
// makes them in the pod's network namespace for this user.
func podSecurityContext() *corev1.PodSecurityContext {
	uid := int64(layout.LauncherUID)
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true),
		RunAsUser:    ptr.To(uid),
		RunAsGroup:   ptr.To(uid),
		// Volumes that support ownership management (claims among them) become the
		// launcher's group's, so QEMU may open the disk images on them.
		FSGroup:        ptr.To(uid),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// Sizes of the launcher's emptyDirs: the kubelet evicts a pod whose volume grows beyond it,
// so a guest or a tenant filling them stops at their own pod.
var (
	// Sockets take no space, nor do the empty placeholders of fd sets.
	socketVolumeSize = resource.MustParse("1Mi")
	fdSetVolumeSize  = resource.MustParse("1Mi")
	// libvirt's and QEMU's state (~0.5 MiB), the console log (two files of at most 4 MiB),
	// QEMU's log, cloud-init ISOs (a few hundred KiB each).
	privateVolumeSize = resource.MustParse("256Mi")
	// Slack on top of empty disks: file system metadata.
	ephemeralSlack = resource.MustParse("16Mi")
)

// ephemeralVolume holds the guest's ephemeral disks. Empty disks are sparse files of known
// capacity, so the volume is limited to their sum. A containerDisk's overlay takes the
// guest's writes to an image whose size is known only on the node, so with containerDisks
// the volume has no limit of its own: the node's ephemeral-storage eviction bounds it, as it
// bounds a container's writable layer.
func ephemeralVolume(vmi *v1.VirtualMachineInstance) corev1.Volume {
	total := ephemeralSlack.DeepCopy()
	for _, vol := range vmi.Spec.Volumes {
		switch {
		case vol.ContainerDisk != nil:
			return emptyDir(layout.EphemeralVolume)
		case vol.EmptyDisk != nil:
			total.Add(vol.EmptyDisk.Capacity)
		}
	}
	return sizedEmptyDir(layout.EphemeralVolume, total)
}

func sizedEmptyDir(name string, size resource.Quantity) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(size)}}}
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

func copyTolerations(t []corev1.Toleration) []corev1.Toleration {
	if t == nil {
		return nil
	}
	out := make([]corev1.Toleration, len(t))
	for i := range t {
		t[i].DeepCopyInto(&out[i])
	}
	return out
}
