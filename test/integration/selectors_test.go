package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

func TestVirtualMachineInstanceFieldSelectors(t *testing.T) {
	ctx := context.Background()
	vmis := api.Client.KubevirtV1().VirtualMachineInstances("selectors")
	place := func(name, node string, phase v1.VirtualMachineInstancePhase) {
		vmi, err := vmis.Create(ctx, newVMI(name), metav1.CreateOptions{})
		require.NoError(t, err)
		vmi.Status.NodeName, vmi.Status.Phase = node, phase
		_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	place("a1", "node-a", v1.Running)
	place("a2", "node-a", v1.Scheduled)
	place("b1", "node-b", v1.Running)

	names := func(selector string) []string {
		list, err := vmis.List(ctx, metav1.ListOptions{FieldSelector: selector})
		require.NoError(t, err)
		var out []string
		for _, item := range list.Items {
			out = append(out, item.Name)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"a1", "a2"}, names("status.nodeName=node-a"))
	assert.ElementsMatch(t, []string{"a1", "b1"}, names("status.phase=Running"))
	assert.ElementsMatch(t, []string{"a1"}, names("status.nodeName=node-a,status.phase=Running"))
	assert.ElementsMatch(t, []string{"b1"}, names("metadata.name=b1"))

	// A node agent's watch sees only its node's instances.
	w, err := vmis.Watch(ctx, metav1.ListOptions{FieldSelector: "status.nodeName=node-b"})
	require.NoError(t, err)
	defer w.Stop()
	ev := <-w.ResultChan()
	assert.Equal(t, "b1", ev.Object.(*v1.VirtualMachineInstance).Name)

	_, err = vmis.List(ctx, metav1.ListOptions{FieldSelector: "spec.hostname=x"})
	require.Error(t, err)
	assert.True(t, apierrors.IsBadRequest(err), "an unsupported field selector is a 400, got %v", err)
}
