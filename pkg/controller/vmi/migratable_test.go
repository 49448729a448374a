package vmi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

func TestSyncMigratable(t *testing.T) {
	rwx := func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		return c
	}
	rwo := func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		return c
	}
	running := func(v *v1.VirtualMachineInstance) { v.Status.NodeName = "node-a" }
	readyPod := newPod("p1", "uid-1", bound("node-a"), podPhase(corev1.PodRunning), func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: layout.ComputeContainer, Ready: true}}
	})
	tests := []struct {
		name       string
		phase      v1.VirtualMachineInstancePhase
		vmiMutate  []func(*v1.VirtualMachineInstance)
		claims     []*corev1.PersistentVolumeClaim
		wantStatus corev1.ConditionStatus // "" when no condition is expected
		wantReason string
		wantMethod v1.VirtualMachineInstanceMigrationMethod
	}{
		{name: "shared claim", phase: v1.Running, vmiMutate: []func(*v1.VirtualMachineInstance){running, withClaims("data")},
			claims: []*corev1.PersistentVolumeClaim{rwx(newClaim("data", nil))}, wantStatus: corev1.ConditionTrue, wantMethod: v1.LiveMigration},
		{name: "RWO claim", phase: v1.Running, vmiMutate: []func(*v1.VirtualMachineInstance){running, withClaims("data")},
			claims:     []*corev1.PersistentVolumeClaim{rwo(newClaim("data", nil))},
			wantStatus: corev1.ConditionFalse, wantReason: v1.VirtualMachineInstanceReasonDisksNotMigratable},
		{name: "claim gone from the cache", phase: v1.Running, vmiMutate: []func(*v1.VirtualMachineInstance){running, withClaims("data")},
			wantStatus: corev1.ConditionFalse, wantReason: v1.VirtualMachineInstanceReasonDisksNotMigratable},
		{name: "container disk", phase: v1.Running, vmiMutate: []func(*v1.VirtualMachineInstance){running, func(v *v1.VirtualMachineInstance) {
			v.Spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "x"}}}}
		}}, wantStatus: corev1.ConditionTrue, wantMethod: v1.BlockMigration},
		{name: "not yet Running: not assessed", phase: v1.Scheduled, vmiMutate: []func(*v1.VirtualMachineInstance){running, withClaims("data")},
			claims: []*corev1.PersistentVolumeClaim{rwx(newClaim("data", nil))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []*v1.VirtualMachineInstance{newVMI(tt.phase, tt.vmiMutate...)}, []*corev1.Pod{readyPod.DeepCopy()}, tt.claims...)
			require.NoError(t, f.c.sync(context.Background(), "ns/vm1"))
			vmi := f.vmi("vm1")
			c := condition(vmi, v1.VirtualMachineInstanceIsMigratable)
			if tt.wantStatus == "" {
				assert.Nil(t, c)
				assert.Empty(t, vmi.Status.MigrationMethod)
				return
			}
			require.NotNil(t, c)
			assert.Equal(t, tt.wantStatus, c.Status)
			assert.Equal(t, tt.wantReason, c.Reason)
			assert.Equal(t, tt.wantMethod, vmi.Status.MigrationMethod)
		})
	}
}
