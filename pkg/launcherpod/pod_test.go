package launcherpod

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/apis/kubevirt/validation/podrules"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

func testVMI(mutate func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		}}},
	}
	if mutate != nil {
		mutate(vmi)
	}
	return vmi
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestResources(t *testing.T) {
	tests := []struct {
		name      string
		vmi       func(*v1.VirtualMachineInstance)
		emulation bool
		want      corev1.ResourceRequirements
		wantErr   bool
	}{
		{
			name: "guest memory from the request plus overhead, 100m per vCPU, KVM",
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("357Mi"), corev1.ResourceCPU: q("100m"), layout.KVMResource: q("1")},
				Limits:   corev1.ResourceList{layout.KVMResource: q("1")},
			},
		},
		{
			name:      "software emulation asks for no KVM device",
			emulation: true,
			want:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("357Mi"), corev1.ResourceCPU: q("100m")}},
		},
		{
			name: "memory.guest wins, topology multiplies vCPUs, limits get the overhead too",
			vmi: func(vmi *v1.VirtualMachineInstance) {
				vmi.Spec.Domain.Memory = &v1.Memory{Guest: ptr.To(q("1Gi"))}
				vmi.Spec.Domain.CPU = &v1.CPU{Cores: 2, Sockets: 2, Threads: 1}
				vmi.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q("2Gi"), corev1.ResourceCPU: q("2")}
			},
			emulation: true,
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("1378Mi"), corev1.ResourceCPU: q("400m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("2402Mi"), corev1.ResourceCPU: q("2")},
			},
		},
		{
			name: "explicit cpu request and overcommitted overhead",
			vmi: func(vmi *v1.VirtualMachineInstance) {
				vmi.Spec.Domain.Resources.Requests[corev1.ResourceCPU] = q("1500m")
				vmi.Spec.Domain.Resources.OvercommitGuestOverhead = true
			},
			emulation: true,
			want:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("128Mi"), corev1.ResourceCPU: q("1500m")}},
		},
		{
			name: "an interface asks for the tun device, requested and limited alike",
			vmi: func(vmi *v1.VirtualMachineInstance) {
				vmi.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default"}}
			},
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("357Mi"), corev1.ResourceCPU: q("100m"), layout.KVMResource: q("1"), layout.TunResource: q("1")},
				Limits:   corev1.ResourceList{layout.KVMResource: q("1"), layout.TunResource: q("1")},
			},
		},
		{
			name: "an interface under emulation: tun without KVM",
			vmi: func(vmi *v1.VirtualMachineInstance) {
				vmi.Spec.Domain.Devices.Interfaces = []v1.Interface{{Name: "default"}}
			},
			emulation: true,
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("357Mi"), corev1.ResourceCPU: q("100m"), layout.TunResource: q("1")},
				Limits:   corev1.ResourceList{layout.TunResource: q("1")},
			},
		},
		{
			// The pod API refuses a request above the limit: 4 vCPUs at 100m each would ask
			// for 400m under a 100m limit.
			name: "the per-vCPU CPU request never exceeds the CPU limit",
			vmi: func(vmi *v1.VirtualMachineInstance) {
				vmi.Spec.Domain.CPU = &v1.CPU{Cores: 4, Sockets: 1, Threads: 1}
				vmi.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("100m")}
			},
			emulation: true,
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("381Mi"), corev1.ResourceCPU: q("100m")}, // 3 more vCPUs
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("100m")},
			},
		},
		{
			name:    "no memory size at all",
			vmi:     func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Domain.Resources.Requests = nil },
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := clusterconfig.Defaults()
			cfg.UseEmulation = tt.emulation
			got, err := Resources(testVMI(tt.vmi), &cfg)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assertList(t, tt.want.Requests, got.Requests, "requests")
			assertList(t, tt.want.Limits, got.Limits, "limits")
		})
	}
}

func assertList(t *testing.T, want, got corev1.ResourceList, what string) {
	t.Helper()
	assert.Len(t, got, len(want), "%s: %v", what, got)
	for name, w := range want {
		g, ok := got[name]
		if assert.True(t, ok, "%s: missing %s", what, name) {
			assert.Equal(t, 0, w.Cmp(g), "%s %s: want %s, got %s", what, name, w.String(), g.String())
		}
	}
}

func TestBuild(t *testing.T) {
	cfg := clusterconfig.Defaults()
	cfg.LauncherImage = "reg/launcher:v1"
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
	}}}
	vmi := testVMI(func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		vmi.Spec.Affinity = affinity
		vmi.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		vmi.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
		vmi.Spec.SchedulerName = "my-scheduler"
		vmi.Spec.PriorityClassName = "high"
		vmi.Spec.Hostname = "web-1"
		vmi.Spec.Subdomain = "svc"
		vmi.Labels[v1.AppLabel] = "spoofed"
	})

	pod, err := Build(vmi, nil, &cfg)
	require.NoError(t, err)
	assert.Empty(t, podrules.ValidatePod(pod), "the pod API would refuse this pod")

	assert.Equal(t, "virt-launcher-vm1-", pod.GenerateName)
	assert.Empty(t, pod.Name)
	assert.Equal(t, "ns", pod.Namespace)
	assert.Equal(t, map[string]string{"app": "web", v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: "uid-1"}, pod.Labels)
	assert.Equal(t, "vm1", pod.Annotations[layout.DomainAnnotation])

	ref := metav1.GetControllerOf(pod)
	require.NotNil(t, ref)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm1", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, *ref)

	spec := pod.Spec
	assert.Equal(t, corev1.RestartPolicyNever, spec.RestartPolicy)
	assert.Equal(t, int64(75), *spec.TerminationGracePeriodSeconds)
	assert.Equal(t, map[string]string{"disk": "ssd"}, spec.NodeSelector)
	assert.Equal(t, affinity, spec.Affinity)
	assert.NotSame(t, affinity, spec.Affinity, "the pod must not share the instance's affinity")
	assert.Equal(t, vmi.Spec.Tolerations, spec.Tolerations)
	assert.Equal(t, "my-scheduler", spec.SchedulerName)
	assert.Equal(t, "high", spec.PriorityClassName)
	assert.Equal(t, "web-1", spec.Hostname)
	assert.Equal(t, "svc", spec.Subdomain)
	assert.False(t, spec.HostNetwork)
	assert.False(t, spec.HostPID)
	assert.False(t, spec.HostIPC)
	assert.False(t, *spec.AutomountServiceAccountToken)
	require.NotNil(t, spec.ShareProcessNamespace)
	assert.True(t, *spec.ShareProcessNamespace, "pause must be PID 1, to reap what libvirt daemonizes")

	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.Equal(t, layout.ComputeContainer, c.Name)
	assert.Equal(t, "reg/launcher:v1", c.Image)
	assert.False(t, *c.SecurityContext.Privileged)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.True(t, *c.SecurityContext.RunAsNonRoot)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	assert.Empty(t, c.SecurityContext.Capabilities.Add)
	psc := spec.SecurityContext
	require.NotNil(t, psc)
	assert.Equal(t, int64(107), *psc.RunAsUser, "KubeVirt's qemu user")
	assert.Equal(t, int64(107), *psc.RunAsGroup)
	assert.Equal(t, int64(107), *psc.FSGroup)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)
	assert.Equal(t, []string{"--state-dir=" + layout.StateDir, "--run-dir=" + layout.RunDir, "--ephemeral-dir=" + layout.EphemeralMountPath}, c.Args)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, map[string]string{layout.EnvNamespace: "ns", layout.EnvName: "vm1", layout.EnvUID: "uid-1", layout.EnvSocketDir: layout.SocketMountPath, layout.EnvEmulation: "false"}, env)
	assert.Equal(t, launcherMounts(), c.VolumeMounts)

	// Only emptyDirs, each with a size limit: nothing of the node's, and a guest that fills
	// a volume gets its own pod evicted.
	require.Len(t, spec.Volumes, len(launcherVolumes))
	for i, vol := range spec.Volumes {
		assert.Equal(t, launcherVolumes[i], vol.Name)
		require.NotNil(t, vol.EmptyDir, "volume %s", vol.Name)
		require.NotNil(t, vol.EmptyDir.SizeLimit, "volume %s", vol.Name)
	}

	// The builder must not modify its input.
	assert.Equal(t, "spoofed", vmi.Labels[v1.AppLabel])
}

func TestBuildDefaults(t *testing.T) {
	cfg := clusterconfig.Defaults()
	pod, err := Build(testVMI(func(vmi *v1.VirtualMachineInstance) {
		vmi.Name = "a-very-long-name-0123456789012345678901234567890123456789012345678901234567890123"
	}), nil, &cfg)
	require.NoError(t, err)
	assert.Equal(t, DefaultGracePeriodSeconds+GracePeriodMargin, *pod.Spec.TerminationGracePeriodSeconds)
	assert.Len(t, pod.Spec.Hostname, 63, "a hostname is a DNS label")
	assert.Equal(t, clusterconfig.DefaultLauncherImage, pod.Spec.Containers[0].Image)
	assert.Nil(t, pod.Spec.NodeSelector)
	assert.Nil(t, pod.Spec.Affinity)
}

func TestEphemeralVolumeSize(t *testing.T) {
	emptyDisk := func(name, size string) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: q(size)}}}
	}
	tests := []struct {
		name    string
		volumes []v1.Volume
		want    string // "" for no limit
	}{
		{name: "no disks: the slack", want: "16Mi"},
		{name: "empty disks add up", volumes: []v1.Volume{emptyDisk("a", "1Gi"), emptyDisk("b", "512Mi")}, want: "1552Mi"},
		{name: "a containerDisk overlay has no known bound", volumes: []v1.Volume{
			emptyDisk("a", "1Gi"), {Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "i"}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vol := ephemeralVolume(testVMI(func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Volumes = tt.volumes }))
			require.NotNil(t, vol.EmptyDir)
			if tt.want == "" {
				assert.Nil(t, vol.EmptyDir.SizeLimit)
				return
			}
			require.NotNil(t, vol.EmptyDir.SizeLimit)
			want := q(tt.want)
			assert.Equal(t, 0, want.Cmp(*vol.EmptyDir.SizeLimit), "got %s", vol.EmptyDir.SizeLimit.String())
		})
	}
}

// 2^21 cores, sockets and threads multiply to 2^63: an int64 product wrapped to a negative
// count and the launcher pod asked for no CPU. Validation refuses the topology; the count
// saturates for whatever reaches the builder unvalidated.
func TestVCPUsDoNotWrap(t *testing.T) {
	vmi := testVMI(func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.Domain.CPU = &v1.CPU{Cores: 1 << 21, Sockets: 1 << 21, Threads: 1 << 21}
	})
	assert.Equal(t, int64(math.MaxInt64), vmi.Spec.Domain.VCPUs())
	cfg := clusterconfig.Defaults()
	r, err := Resources(vmi, &cfg)
	require.NoError(t, err)
	assert.Positive(t, r.Requests.Cpu().Sign())

	assert.Equal(t, int64(24), testVMI(func(vmi *v1.VirtualMachineInstance) {
		vmi.Spec.Domain.CPU = &v1.CPU{Cores: 4, Sockets: 2, Threads: 3}
	}).Spec.Domain.VCPUs())
}

// TestGuestConsoleLog: the guest-console-log sidecar follows the console log the launcher
// writes, read-only, as the last init container with restartPolicy Always (so the pod ends
// with the compute container), with small resources that keep a Guaranteed pod Guaranteed;
// a guest without a serial console has none.
func TestGuestConsoleLog(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vmi        func(*v1.VirtualMachineInstance)
		want       bool
		guaranteed bool
	}{
		{name: "a guest with a serial console", want: true},
		{name: "autoattachSerialConsole true", vmi: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Devices.AutoattachSerialConsole = ptr.To(true)
		}, want: true},
		{name: "no serial console", vmi: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Devices.AutoattachSerialConsole = ptr.To(false)
		}},
		{name: "a Guaranteed pod", vmi: func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: q("1Gi"), corev1.ResourceCPU: q("1")}
			vmi.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q("1Gi"), corev1.ResourceCPU: q("1")}
		}, want: true, guaranteed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := clusterconfig.Defaults()
			cfg.LauncherImage = "reg/launcher:v1"
			pod, err := Build(testVMI(tc.vmi), nil, &cfg)
			require.NoError(t, err)
			var sidecar *corev1.Container
			for i := range pod.Spec.InitContainers {
				if pod.Spec.InitContainers[i].Name == layout.GuestConsoleLogContainer {
					sidecar = &pod.Spec.InitContainers[i]
					assert.Equal(t, len(pod.Spec.InitContainers)-1, i, "after the copies")
				}
			}
			for _, c := range pod.Spec.Containers {
				assert.NotEqual(t, layout.GuestConsoleLogContainer, c.Name)
			}
			if !tc.want {
				assert.Nil(t, sidecar)
				return
			}
			require.NotNil(t, sidecar)
			assert.Equal(t, "reg/launcher:v1", sidecar.Image)
			assert.Equal(t, []string{"--follow-console-log=/var/run/hangar/private/run/console.log"}, sidecar.Args)
			assert.Equal(t, layout.RunDir+"/"+layout.ConsoleLogName, strings.TrimPrefix(sidecar.Args[0], "--follow-console-log="))
			require.NotNil(t, sidecar.RestartPolicy)
			assert.Equal(t, corev1.ContainerRestartPolicyAlways, *sidecar.RestartPolicy)
			assert.Equal(t, []corev1.VolumeMount{{Name: layout.PrivateVolume, MountPath: layout.PrivateMountPath, ReadOnly: true}}, sidecar.VolumeMounts)
			sc := sidecar.SecurityContext
			require.NotNil(t, sc)
			assert.True(t, *sc.ReadOnlyRootFilesystem)
			assert.False(t, *sc.AllowPrivilegeEscalation)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
			assertList(t, corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("60Mi")}, sidecar.Resources.Requests, "requests")
			if tc.guaranteed {
				assert.True(t, isGuaranteed(sidecar.Resources), "a Guaranteed pod stays Guaranteed")
			} else {
				assertList(t, corev1.ResourceList{corev1.ResourceMemory: q("60Mi")}, sidecar.Resources.Limits, "limits: no CPU limit where the compute container has none")
			}
			assert.Empty(t, podrules.ValidatePod(pod), "the pod API would refuse this pod")
		})
	}
}
