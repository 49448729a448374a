package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// createCatalogue creates the cluster instance type and preference the VM tests name.
func createCatalogue(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	client, _ := instancetypes(t)
	v1beta1 := client.InstancetypeV1beta1()
	_, err := v1beta1.VirtualMachineClusterInstancetypes().Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "itest.medium"}, Spec: instancetypeSpec(1, "4Gi")}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	topology := instancetypev1beta1.Cores
	_, err = v1beta1.VirtualMachineClusterPreferences().Create(ctx, &instancetypev1beta1.VirtualMachineClusterPreference{
		ObjectMeta: metav1.ObjectMeta{Name: "itest.fedora"},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
			CPU:          &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &topology},
			Devices:      &instancetypev1beta1.DevicePreferences{PreferredDiskBus: v1.DiskBusVirtio, PreferredRng: &v1.Rng{}},
			Requirements: &instancetypev1beta1.PreferenceRequirements{Memory: &instancetypev1beta1.MemoryPreferenceRequirement{Guest: resource.MustParse("2Gi")}},
		},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// vmWithInstancetype is a VM whose template gives no CPU or memory: the instance type does.
func vmWithInstancetype(name, instancetype, preference string) *v1.VirtualMachine {
	vm := newVM(name, v1.RunStrategyHalted)
	vm.Spec.Template.Spec.Domain.Resources = v1.ResourceRequirements{}
	vm.Spec.Instancetype = &v1.InstancetypeMatcher{Name: instancetype}
	if preference != "" {
		vm.Spec.Preference = &v1.PreferenceMatcher{Name: preference}
	}
	return vm
}

// TestVirtualMachineWithInstancetype: a VM names an instance type and a preference, and is
// validated as its instance will be; the template that sets what the instance type sets is
// refused naming both fields.
func TestVirtualMachineWithInstancetype(t *testing.T) {
	createCatalogue(t)
	ctx := context.Background()
	ns := "vm-instancetype"
	vms := api.Client.KubevirtV1().VirtualMachines(ns)

	t.Run("KubeVirt's manifest is accepted as written", func(t *testing.T) {
		out := kubectl(t, "-n", ns, "apply", "--server-side", "-f", "testdata/vm-instancetype.yaml")
		assert.Contains(t, out, "virtualmachine.kubevirt.io/it1 serverside-applied")
		vm, err := vms.Get(ctx, "it1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, &v1.InstancetypeMatcher{Name: "itest.medium", Kind: "VirtualMachineClusterInstancetype"}, vm.Spec.Instancetype)
		assert.Equal(t, "itest.fedora", vm.Spec.Preference.Name)
		assert.Nil(t, vm.Spec.Template.Spec.Domain.CPU, "the template is kept as written: no defaulted topology")
		assert.Nil(t, vm.Spec.Template.Spec.Domain.Memory)
	})

	t.Run("a template without memory and no instance type is still refused", func(t *testing.T) {
		vm := vmWithInstancetype("no-memory", "", "")
		vm.Spec.Instancetype = nil
		_, err := vms.Create(ctx, vm, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
	})

	t.Run("conflicts name both fields", func(t *testing.T) {
		vm := vmWithInstancetype("conflict", "itest.medium", "")
		vm.Spec.Template.Spec.Domain.CPU = &v1.CPU{Sockets: 2}
		vm.Spec.Template.Spec.Domain.Memory = &v1.Memory{Guest: ptr.To(resource.MustParse("1Gi"))}
		_, err := vms.Create(ctx, vm, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		fields := causeFields(err)
		assert.Contains(t, fields, "spec.template.spec.domain.cpu.sockets")
		assert.Contains(t, fields, "spec.template.spec.domain.memory.guest")
		assert.Contains(t, err.Error(), "VirtualMachineClusterInstancetype itest.medium")
		assert.Contains(t, err.Error(), "spec.memory.guest")
	})

	t.Run("a missing instance type or preference", func(t *testing.T) {
		_, err := vms.Create(ctx, vmWithInstancetype("missing", "no.such.type", "no.such.preference"), metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.ElementsMatch(t, []string{"spec.instancetype.name", "spec.preference.name"}, causeFields(err))
	})

	t.Run("a namespaced instance type of another namespace is not found", func(t *testing.T) {
		client, _ := instancetypes(t)
		_, err := client.InstancetypeV1beta1().VirtualMachineInstancetypes("elsewhere").Create(ctx, &instancetypev1beta1.VirtualMachineInstancetype{
			ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: instancetypeSpec(2, "2Gi")}, metav1.CreateOptions{})
		require.NoError(t, err)
		vm := vmWithInstancetype("other-namespace", "local", "")
		vm.Spec.Instancetype.Kind = "virtualmachineinstancetype"
		_, err = vms.Create(ctx, vm, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Equal(t, []string{"spec.instancetype.name"}, causeFields(err))
		created, err := api.Client.KubevirtV1().VirtualMachines("elsewhere").Create(ctx, vm, metav1.CreateOptions{})
		require.NoError(t, err, "its own namespace's is found, by the lower-case kind too")
		assert.Equal(t, "virtualmachineinstancetype", created.Spec.Instancetype.Kind)
	})

	t.Run("bad kinds, and inference from a volume without labels", func(t *testing.T) {
		vm := vmWithInstancetype("bad-kind", "itest.medium", "")
		vm.Spec.Instancetype.Kind = "VirtualMachinePreference"
		_, err := vms.Create(ctx, vm, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Equal(t, []string{"spec.instancetype.kind"}, causeFields(err))

		vm = vmWithInstancetype("infer", "", "")
		vm.Spec.Instancetype.InferFromVolume = "root"
		_, err = vms.Create(ctx, vm, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Equal(t, []string{"spec.instancetype.inferFromVolume"}, causeFields(err))
	})

	t.Run("the preference's requirements", func(t *testing.T) {
		client, _ := instancetypes(t)
		_, err := client.InstancetypeV1beta1().VirtualMachineClusterInstancetypes().Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
			ObjectMeta: metav1.ObjectMeta{Name: "itest.tiny"}, Spec: instancetypeSpec(1, "1Gi")}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = vms.Create(ctx, vmWithInstancetype("too-small", "itest.tiny", "itest.fedora"), metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.True(t, strings.Contains(err.Error(), "requires at least 2Gi"), err.Error())
	})

	t.Run("an update is checked as a create", func(t *testing.T) {
		vm, err := vms.Get(ctx, "it1", metav1.GetOptions{})
		require.NoError(t, err)
		vm.Spec.Template.Spec.Domain.CPU = &v1.CPU{Cores: 4}
		_, err = vms.Update(ctx, vm, metav1.UpdateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Equal(t, []string{"spec.template.spec.domain.cpu.cores"}, causeFields(err))
	})
}

// TestExpandSpec: expand-spec answers with the VM as its instance will be made, in both
// groups; expand-vm-spec does the same for a VM sent in the body.
func TestExpandSpec(t *testing.T) {
	createCatalogue(t)
	ctx := context.Background()
	ns := "expand-spec"
	_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(ctx, vmWithInstancetype("expand", "itest.medium", "itest.fedora"), metav1.CreateOptions{})
	require.NoError(t, err)
	rc := api.Client.KubevirtV1().RESTClient()

	check := func(t *testing.T, raw []byte) {
		t.Helper()
		var vm v1.VirtualMachine
		require.NoError(t, json.Unmarshal(raw, &vm), string(raw))
		assert.Equal(t, "VirtualMachine", vm.Kind)
		assert.Nil(t, vm.Spec.Instancetype, "the expanded VM names no instance type")
		assert.Nil(t, vm.Spec.Preference)
		domain := vm.Spec.Template.Spec.Domain
		require.NotNil(t, domain.CPU)
		assert.Equal(t, []uint32{1, 1, 1}, []uint32{domain.CPU.Sockets, domain.CPU.Cores, domain.CPU.Threads}, "one vCPU as cores")
		assert.Equal(t, "4Gi", domain.Memory.Guest.String())
		assert.NotNil(t, domain.Devices.Rng, "the preference's")
		assert.Equal(t, "q35", domain.Machine.Type, "defaulted as an instance")
	}
	for _, path := range []string{
		"/apis/kubevirt.io/v1/namespaces/" + ns + "/virtualmachines/expand/expand-spec",
		"/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachines/expand/expand-spec",
	} {
		raw, err := rc.Get().AbsPath(path).DoRaw(ctx)
		require.NoError(t, err, "%s: %s", path, raw)
		check(t, raw)
	}

	body, err := json.Marshal(vmWithInstancetype("preview", "itest.medium", "itest.fedora"))
	require.NoError(t, err)
	raw, err := rc.Put().AbsPath("/apis/subresources.kubevirt.io/v1/namespaces/"+ns+"/expand-vm-spec").
		SetHeader("Content-Type", "application/json").Body(body).DoRaw(ctx)
	require.NoError(t, err, string(raw))
	check(t, raw)
	_, err = api.Client.KubevirtV1().VirtualMachines(ns).Get(ctx, "preview", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "expand-vm-spec stores nothing, got %v", err)

	conflicting := vmWithInstancetype("preview", "itest.medium", "")
	conflicting.Spec.Template.Spec.Domain.CPU = &v1.CPU{Cores: 2}
	body, err = json.Marshal(conflicting)
	require.NoError(t, err)
	err = rc.Put().AbsPath("/apis/subresources.kubevirt.io/v1/namespaces/"+ns+"/expand-vm-spec").
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Equal(t, []string{"spec.template.spec.domain.cpu.cores"}, causeFields(err))
}
