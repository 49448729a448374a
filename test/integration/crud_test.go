package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	applyv1 "github.com/hangarvm/hangar/pkg/generated/applyconfiguration/kubevirt/v1"
)

func TestVirtualMachineLifecycle(t *testing.T) {
	ctx := context.Background()
	vms := api.Client.KubevirtV1().VirtualMachines("crud")

	watcher, err := vms.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer watcher.Stop()

	created, err := vms.Create(ctx, newVM("web", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.Generation)
	assert.Equal(t, "q35", created.Spec.Template.Spec.Domain.Machine.Type, "defaults are applied")

	got, err := vms.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, created.UID, got.UID)

	list, err := vms.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)

	got.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
	updated, err := vms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), updated.Generation, "a spec change bumps the generation")

	// Merge, JSON and strategic merge patches.
	patched, err := vms.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"front"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, "front", patched.Labels["tier"])
	assert.Equal(t, int64(2), patched.Generation, "a metadata change keeps the generation")
	patched, err = vms.Patch(ctx, "web", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/runStrategy","value":"Always"},{"op":"replace","path":"/spec/runStrategy","value":"Manual"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.RunStrategyManual, *patched.Spec.RunStrategy)
	_, err = vms.Patch(ctx, "web", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/runStrategy","value":"Always"},{"op":"replace","path":"/spec/runStrategy","value":"Halted"}]`), metav1.PatchOptions{})
	require.Error(t, err, "a failed test operation rejects the whole patch")
	patched, err = vms.Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"volumes":[{"name":"data","emptyDisk":{"capacity":"1Gi"}}]}}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	names := []string{}
	for _, v := range patched.Spec.Template.Spec.Volumes {
		names = append(names, v.Name)
	}
	assert.ElementsMatch(t, []string{"root", "data"}, names, "strategic merge patches merge volumes by name")

	require.NoError(t, vms.Delete(ctx, "web", metav1.DeleteOptions{}))
	_, err = vms.Get(ctx, "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)

	var seen []watch.EventType
	timeout := time.After(10 * time.Second)
	for len(seen) < 6 {
		select {
		case ev := <-watcher.ResultChan():
			seen = append(seen, ev.Type)
		case <-timeout:
			t.Fatalf("watch saw only %v", seen)
		}
	}
	// Create, update, three successful patches, delete: the failed patch wrote nothing.
	assert.Equal(t, []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Modified, watch.Modified, watch.Deleted}, seen)
}

func TestServerSideApply(t *testing.T) {
	ctx := context.Background()
	vms := api.Client.KubevirtV1().VirtualMachines("apply")
	cfg := applyv1.VirtualMachine("applied", "apply").
		WithLabels(map[string]string{"owner": "gitops"}).
		WithSpec(applyv1.VirtualMachineSpec().
			WithRunStrategy(v1.RunStrategyHalted).
			WithTemplate(applyv1.VirtualMachineInstanceTemplateSpec().
				WithSpec(applyv1.VirtualMachineInstanceSpec().
					WithDomain(applyv1.DomainSpec().
						WithMemory(applyv1.Memory().WithGuest(resourceQuantity(t, "64Mi"))).
						WithDevices(applyv1.Devices())))))
	vm, err := vms.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "gitops"})
	require.NoError(t, err)
	assert.Equal(t, "64Mi", vm.Spec.Template.Spec.Domain.Memory.Guest.String())

	// Another manager changing a field gitops owns conflicts, unless forced.
	cfg2 := applyv1.VirtualMachine("applied", "apply").WithSpec(applyv1.VirtualMachineSpec().WithRunStrategy(v1.RunStrategyAlways))
	_, err = vms.Apply(ctx, cfg2, metav1.ApplyOptions{FieldManager: "someone-else"})
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "got %v", err)
	vm, err = vms.Apply(ctx, cfg2, metav1.ApplyOptions{FieldManager: "someone-else", Force: true})
	require.NoError(t, err)
	assert.Equal(t, v1.RunStrategyAlways, *vm.Spec.RunStrategy)

	// Re-applying the same configuration is a no-op.
	before := vm.ResourceVersion
	vm, err = vms.Apply(ctx, cfg2, metav1.ApplyOptions{FieldManager: "someone-else"})
	require.NoError(t, err)
	assert.Equal(t, before, vm.ResourceVersion)

	managers := map[string]bool{}
	for _, f := range vm.ManagedFields {
		managers[f.Manager] = true
	}
	assert.Equal(t, map[string]bool{"gitops": true, "someone-else": true}, managers)
}

func TestResourceVersionConflict(t *testing.T) {
	ctx := context.Background()
	vms := api.Client.KubevirtV1().VirtualMachines("conflict")
	vm, err := vms.Create(ctx, newVM("contended", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)

	first := vm.DeepCopy()
	first.Labels["writer"] = "first"
	_, err = vms.Update(ctx, first, metav1.UpdateOptions{})
	require.NoError(t, err)

	stale := vm.DeepCopy()
	stale.Labels["writer"] = "second"
	_, err = vms.Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "an update from a stale resourceVersion must conflict, got %v", err)
}

func TestDryRunStoresNothing(t *testing.T) {
	ctx := context.Background()
	vms := api.Client.KubevirtV1().VirtualMachines("dryrun")
	vm, err := vms.Create(ctx, newVM("ghost", v1.RunStrategyHalted), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	assert.Equal(t, "q35", vm.Spec.Template.Spec.Domain.Machine.Type, "dry run returns the defaulted object")
	_, err = vms.Get(ctx, "ghost", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}
