package app

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/launcherpod"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// launcherPod is the compute container of the pod virt-controller builds for an instance.
func launcherPod(t *testing.T) corev1.Container {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "uid-1"},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Resources: v1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		}}},
	}
	cfg := clusterconfig.Defaults()
	cfg.UseEmulation = true
	pod, err := launcherpod.Build(vmi, nil, &cfg)
	require.NoError(t, err)
	return pod.Spec.Containers[0]
}

// The command lines virt-launcher is started with, and Go's flag package's spellings, which it
// read its flags with before pflag.
func TestCommandLines(t *testing.T) {
	pod := launcherPod(t)
	podEnv := map[string]string{}
	for _, e := range pod.Env {
		podEnv[e.Name] = e.Value
	}
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(t *testing.T, o *Options)
	}{
		{
			name: "virt-controller's launcher pod",
			env:  podEnv,
			args: pod.Args,
			check: func(t *testing.T, o *Options) {
				assert.Equal(t, ModeGuest, o.Mode)
				c := o.Launcher
				assert.Equal(t, []string{"ns", "vm1", "uid-1", layout.SocketMountPath}, []string{c.Namespace, c.Name, c.UID, c.SocketDir})
				assert.True(t, c.UseEmulation)
				assert.Equal(t, layout.StateDir, c.LibvirtStateDir)
				assert.Equal(t, layout.RunDir, c.RunDir)
				assert.Equal(t, layout.EphemeralMountPath, c.EphemeralDir)
				assert.Equal(t, 30*time.Second, c.FinalWait)
			},
		},
		{
			name: "virt-handler's init container (artifacts/components/virt-handler.yaml)",
			args: []string{"--state-dir=/var/run/hangar/qemu/libvirt", "--write-qemu-capabilities=/var/run/hangar/qemu/capabilities.xml"},
			check: func(t *testing.T, o *Options) {
				assert.Equal(t, ModeQEMUCapabilities, o.Mode)
				assert.Equal(t, "/var/run/hangar/qemu/libvirt", o.Launcher.LibvirtStateDir)
				assert.Equal(t, "/var/run/hangar/qemu/capabilities.xml", o.QEMUCapabilitiesFile)
			},
		},
		{
			name: "test/node's launchers",
			args: []string{"--namespace", "ns", "--name", "vm1", "--uid", "uid-1", "--socket-dir", "/s", "--state-dir", "/st",
				"--run-dir", "/r", "--ephemeral-dir", "/e", "--use-emulation", "--kernel-boot-root", "/k", "--final-wait", "10s", "-v=2"},
			check: func(t *testing.T, o *Options) {
				c := o.Launcher
				assert.Equal(t, []string{"ns", "vm1", "uid-1", "/s", "/st", "/r", "/e", "/k"},
					[]string{c.Namespace, c.Name, c.UID, c.SocketDir, c.LibvirtStateDir, c.RunDir, c.EphemeralDir, c.KernelBootRoot})
				assert.True(t, c.UseEmulation)
				assert.Equal(t, 10*time.Second, c.FinalWait)
			},
		},
		{
			name: "one dash, as Go's flag package reads it",
			args: []string{"-namespace=ns", "-name", "-vm1", "-uid", "uid-1", "-use-emulation", "-final-wait=5s", "-v", "3", "-vm-state-dir", "/vm"},
			check: func(t *testing.T, o *Options) {
				c := o.Launcher
				assert.Equal(t, []string{"ns", "-vm1", "uid-1", "/vm"}, []string{c.Namespace, c.Name, c.UID, c.VMStateDir})
				assert.True(t, c.UseEmulation)
				assert.Equal(t, 5*time.Second, c.FinalWait)
			},
		},
		{
			name: "a bool's value after =",
			env:  map[string]string{layout.EnvEmulation: "true"},
			args: []string{"-use-emulation=false"},
			check: func(t *testing.T, o *Options) {
				assert.False(t, o.Launcher.UseEmulation)
			},
		},
		{
			name: "flags end at the first argument that is not one",
			args: []string{"--name=vm1", "guest", "--uid=uid-1"},
			check: func(t *testing.T, o *Options) {
				assert.Equal(t, "vm1", o.Launcher.Name)
				assert.Empty(t, o.Launcher.UID)
			},
		},
		{
			name: "and at --",
			args: []string{"-name=vm1", "--", "-uid=uid-1"},
			check: func(t *testing.T, o *Options) {
				assert.Equal(t, "vm1", o.Launcher.Name)
				assert.Empty(t, o.Launcher.UID)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{layout.EnvNamespace, layout.EnvName, layout.EnvUID, layout.EnvSocketDir, layout.EnvEmulation} {
				t.Setenv(k, tt.env[k])
			}
			o := NewOptions()
			fs := newFlagSet(o)
			require.NoError(t, fs.Parse(goFlagSpelling(fs, tt.args)))
			require.NoError(t, o.Complete())
			tt.check(t, o)
		})
	}
}

func TestCommandLineErrors(t *testing.T) {
	for _, args := range [][]string{{"-bogus"}, {"--bogus"}, {"-name"}, {"-final-wait=soon"}} {
		fs := newFlagSet(NewOptions())
		fs.SetOutput(io.Discard)
		assert.Error(t, fs.Parse(goFlagSpelling(fs, args)), "%q", args)
	}
}
