//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	"github.com/hangarvm/hangar/pkg/launcherpod"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
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
	for _, c := range mounted.Spec.InitContainers {
		assert.Equal(t, layout.GuestConsoleLogContainer, c.Name, "nothing to copy: the console log's sidecar alone")
	}
	vol := kernelBootVolume(mounted)
	require.NotNil(t, vol)
	require.NotNil(t, vol.Image, "the kernelBoot image is an image volume")
	assert.Equal(t, guestImage, vol.Image.Reference)

	setConfiguration(t, func(c *operatorv1alpha1.HangarConfiguration) { c.DeveloperConfiguration.FeatureGates = nil })
	copied := boot("copied")
	var names []string
	for _, c := range copied.Spec.InitContainers {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{launcherpod.CopyHelperContainer, launcherpod.KernelBootContainer, layout.GuestConsoleLogContainer}, names)
	vol = kernelBootVolume(copied)
	require.NotNil(t, vol)
	assert.NotNil(t, vol.EmptyDir, "the kernelBoot files are copied into an emptyDir")
}

// setConfiguration changes the Hangar object's configuration while the test runs, waits until
// hangar-operator has applied it (the cluster configuration hangar/hangar-config and what else
// the settings bring) and gives the controllers' watch time to see it; it restores the configuration when the test ends.
func setConfiguration(t *testing.T, change func(*operatorv1alpha1.HangarConfiguration)) {
	t.Helper()
	ctx := context.Background()
	hangars := installation.HangarvmV1alpha1().Hangars()
	set := func(c operatorv1alpha1.HangarConfiguration) error {
		var updated *operatorv1alpha1.Hangar
		// The operator writes the object's status meanwhile: a conflict is retried.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			h, err := hangars.Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if updated = h; equality.Semantic.DeepEqual(h.Spec.Configuration, c) {
				return nil
			}
			h.Spec.Configuration = c
			updated, err = hangars.Update(ctx, h, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
		// The operator writes the status after it applied what the generation asks for
		// (hangar-config, and the objects some settings bring, such as an admission policy).
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			now, err := hangars.Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
			return err == nil && now.Status.ObservedGeneration >= updated.Generation, nil
		})
		if err != nil {
			return fmt.Errorf("hangar-operator did not apply generation %d: %w", updated.Generation, err)
		}
		time.Sleep(2 * time.Second) // the controllers' configuration watch
		return nil
	}
	h, err := hangars.Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
	require.NoError(t, err)
	old := *h.Spec.Configuration.DeepCopy()
	changed := *old.DeepCopy()
	change(&changed)
	require.NoError(t, set(changed))
	t.Cleanup(func() {
		if err := set(old); err != nil {
			t.Errorf("restore the Hangar object's configuration: %v", err)
		}
	})
}
