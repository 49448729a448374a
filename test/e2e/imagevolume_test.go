//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// TestGuestImagesMountedOrCopied boots the kernelBoot guest twice: with the ImageVolume gate
// the local overlay sets, its launcher pod mounts the image and runs no init container; with
// the gate taken out of the cluster configuration, init containers copy the files (the path for
// runtimes without image volumes). The guest boots either way.
func TestGuestImagesMountedOrCopied(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-images")
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	boot := func(name string) corev1.Pod {
		t.Helper()
		_, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: guestSpec()}, metav1.CreateOptions{})
		require.NoError(t, err)
		attach(t, ns, name, "console").waitFor(t, banner, 120*time.Second)
		vmi, err := vmis.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		pods := launcherPods(t, ns, vmi.UID)
		require.Len(t, pods, 1)
		return pods[0]
	}
	kernelBootVolume := func(pod corev1.Pod) *corev1.Volume {
		for i, v := range pod.Spec.Volumes {
			if v.Name == launcherpod.KernelBootVolume {
				return &pod.Spec.Volumes[i]
			}
		}
		return nil
	}

	mounted := boot("mounted")
	assert.Empty(t, mounted.Spec.InitContainers, "nothing to copy")
	vol := kernelBootVolume(mounted)
	require.NotNil(t, vol)
	require.NotNil(t, vol.Image, "the kernelBoot image is an image volume")
	assert.Equal(t, guestImage, vol.Image.Reference)

	setClusterConfig(t, clusterconfig.KeyFeatureGates, nil)
	copied := boot("copied")
	var names []string
	for _, c := range copied.Spec.InitContainers {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{launcherpod.CopyHelperContainer, launcherpod.KernelBootContainer}, names)
	vol = kernelBootVolume(copied)
	require.NotNil(t, vol)
	assert.NotNil(t, vol.EmptyDir, "the kernelBoot files are copied into an emptyDir")
}

// setClusterConfig sets key of virt-controller's cluster configuration (hangar/hangar-config)
// to *value, or removes it for nil, while the test runs, and gives the controller's watch
// time to see it.
func setClusterConfig(t *testing.T, key string, value *string) {
	t.Helper()
	ctx := context.Background()
	cms := kube.CoreV1().ConfigMaps("hangar")
	set := func(v *string) error {
		cm, err := cms.Get(ctx, "hangar-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		if v == nil {
			delete(cm.Data, key)
		} else {
			cm.Data[key] = *v
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}
	cm, err := cms.Get(ctx, "hangar-config", metav1.GetOptions{})
	require.NoError(t, err)
	var old *string
	if v, ok := cm.Data[key]; ok {
		old = &v
	}
	require.NoError(t, set(value))
	t.Cleanup(func() {
		if err := set(old); err != nil {
			t.Errorf("restore %s of the cluster configuration: %v", key, err)
		}
		time.Sleep(2 * time.Second)
	})
	time.Sleep(2 * time.Second) // the controller's configuration watch
}
