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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	instancetypev1beta1 "github.com/hangarvm/hangar/pkg/apis/instancetype/v1beta1"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/operator/render"
)

// instancetypes is the instancetype.kubevirt.io clientset (protobuf) on the shared virt-api;
// warnings collects the warnings the server sends it.
func instancetypes(t *testing.T) (instancetypeclient.Interface, *warningRecorder) {
	t.Helper()
	cfg := rest.CopyConfig(api.Config)
	recorder := &warningRecorder{}
	cfg.WarningHandler = recorder
	client, err := instancetypeclient.NewForConfig(cfg)
	require.NoError(t, err)
	return client, recorder
}

type warningRecorder struct{ warnings []string }

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.warnings = append(w.warnings, text)
}

func instancetypeSpec(cpus uint32, memory string) instancetypev1beta1.VirtualMachineInstancetypeSpec {
	return instancetypev1beta1.VirtualMachineInstancetypeSpec{
		CPU:    instancetypev1beta1.CPUInstancetype{Guest: cpus},
		Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse(memory)},
	}
}

// TestInstancetypeLifecycle creates, reads, updates and deletes each of the four kinds.
func TestInstancetypeLifecycle(t *testing.T) {
	ctx := context.Background()
	client, _ := instancetypes(t)
	v1beta1 := client.InstancetypeV1beta1()
	ns := "instancetypes"

	t.Run("namespaced instance type", func(t *testing.T) {
		its := v1beta1.VirtualMachineInstancetypes(ns)
		created, err := its.Create(ctx, &instancetypev1beta1.VirtualMachineInstancetype{
			ObjectMeta: metav1.ObjectMeta{Name: "small.1", Labels: map[string]string{"size": "small"}},
			Spec:       instancetypeSpec(1, "1Gi"),
		}, metav1.CreateOptions{})
		require.NoError(t, err, "names are DNS subdomains: dots are allowed")
		assert.Equal(t, int64(1), created.Generation)
		assert.Equal(t, ns, created.Namespace)

		created.Spec.CPU.Guest = 2
		updated, err := its.Update(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
		assert.Equal(t, int64(2), updated.Generation, "a spec change bumps the generation")
		patched, err := its.Patch(ctx, "small.1", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"x"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		assert.Equal(t, int64(2), patched.Generation, "a metadata change keeps the generation")

		list, err := its.List(ctx, metav1.ListOptions{LabelSelector: "size=small"})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		assert.Equal(t, uint32(2), list.Items[0].Spec.CPU.Guest)
		other, err := v1beta1.VirtualMachineInstancetypes("elsewhere").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, other.Items, "namespaced: another namespace does not see it")

		require.NoError(t, its.Delete(ctx, "small.1", metav1.DeleteOptions{}))
		_, err = its.Get(ctx, "small.1", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	})

	t.Run("cluster instance type", func(t *testing.T) {
		its := v1beta1.VirtualMachineClusterInstancetypes()
		created, err := its.Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
			ObjectMeta: metav1.ObjectMeta{Name: "lifecycle.medium"},
			Spec:       instancetypeSpec(1, "4Gi"),
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Empty(t, created.Namespace, "cluster-scoped")
		got, err := its.Get(ctx, "lifecycle.medium", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "4Gi", got.Spec.Memory.Guest.String())
		require.NoError(t, its.Delete(ctx, "lifecycle.medium", metav1.DeleteOptions{}))
	})

	t.Run("namespaced preference", func(t *testing.T) {
		prefs := v1beta1.VirtualMachinePreferences(ns)
		topology := instancetypev1beta1.Cores
		created, err := prefs.Create(ctx, &instancetypev1beta1.VirtualMachinePreference{
			ObjectMeta: metav1.ObjectMeta{Name: "cores"},
			Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
				CPU:                                    &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &topology},
				PreferredTerminationGracePeriodSeconds: ptr.To[int64](30),
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, instancetypev1beta1.Cores, *created.Spec.CPU.PreferredCPUTopology)
		require.NoError(t, prefs.Delete(ctx, "cores", metav1.DeleteOptions{}))
	})

	t.Run("cluster preference", func(t *testing.T) {
		prefs := v1beta1.VirtualMachineClusterPreferences()
		created, err := prefs.Create(ctx, &instancetypev1beta1.VirtualMachineClusterPreference{
			ObjectMeta: metav1.ObjectMeta{Name: "lifecycle.linux"},
			Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
				Devices: &instancetypev1beta1.DevicePreferences{PreferredDiskBus: "virtio"},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Empty(t, created.Namespace)
		list, err := prefs.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=lifecycle.linux"})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		require.NoError(t, prefs.Delete(ctx, "lifecycle.linux", metav1.DeleteOptions{}))
	})
}

// TestInstancetypeValidation: what no VM could use is refused with a 422 naming the fields;
// what Hangar's guests cannot have is accepted with a warning (KubeVirt accepts it), and a VM
// that names it is refused later.
func TestInstancetypeValidation(t *testing.T) {
	ctx := context.Background()
	client, recorder := instancetypes(t)
	v1beta1 := client.InstancetypeV1beta1()

	_, err := v1beta1.VirtualMachineClusterInstancetypes().Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "invalid"},
		Spec:       instancetypeSpec(0, "1Pi"),
	}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	causes := causeFields(err)
	assert.Contains(t, causes, "spec.cpu.guest")
	assert.Contains(t, causes, "spec.memory.guest")

	_, err = v1beta1.VirtualMachineInstancetypes("validation").Create(ctx, &instancetypev1beta1.VirtualMachineInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"},
		Spec:       instancetypeSpec(1, "1Gi"),
	}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Contains(t, causeFields(err), "metadata.name")

	across := instancetypev1beta1.SpreadAcrossCoresThreads
	topology := instancetypev1beta1.Spread
	_, err = v1beta1.VirtualMachinePreferences("validation").Create(ctx, &instancetypev1beta1.VirtualMachinePreference{
		ObjectMeta: metav1.ObjectMeta{Name: "spread"},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{CPU: &instancetypev1beta1.CPUPreferences{
			PreferredCPUTopology: &topology,
			SpreadOptions:        &instancetypev1beta1.SpreadOptions{Across: &across, Ratio: ptr.To[uint32](4)},
		}},
	}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "KubeVirt's rule: a cores-and-threads spread has 2 threads per core; got %v", err)
	assert.Contains(t, causeFields(err), "spec.cpu.spreadOptions.ratio")

	// An update is validated as a create is.
	created, err := v1beta1.VirtualMachineInstancetypes("validation").Create(ctx, &instancetypev1beta1.VirtualMachineInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "valid"},
		Spec:       instancetypeSpec(1, "1Gi"),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Spec.Memory.OvercommitPercent = 150
	_, err = v1beta1.VirtualMachineInstancetypes("validation").Update(ctx, created, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Contains(t, causeFields(err), "spec.memory.overcommitPercent")

	recorder.warnings = nil
	_, err = v1beta1.VirtualMachineClusterInstancetypes().Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "dedicated"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 2, DedicatedCPUPlacement: ptr.To(true)},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("4Gi")},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "KubeVirt's cx1 series asks for dedicated CPUs: accepted")
	require.Len(t, recorder.warnings, 1)
	assert.Contains(t, recorder.warnings[0], "spec.cpu.dedicatedCPUPlacement")
	require.NoError(t, v1beta1.VirtualMachineClusterInstancetypes().Delete(ctx, "dedicated", metav1.DeleteOptions{}))
}

func causeFields(err error) []string {
	var fields []string
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	return fields
}

// TestInstancetypeKubectl: kubectl applies KubeVirt-shaped manifests, finds the kinds by
// KubeVirt's short names, prints NAME and AGE, and explains the fields (OpenAPI).
func TestInstancetypeKubectl(t *testing.T) {
	ns := "instancetype-kubectl"
	out := kubectl(t, "-n", ns, "apply", "--dry-run=server", "-f", "testdata/instancetypes.yaml")
	assert.Contains(t, out, "virtualmachineinstancetype.instancetype.kubevirt.io/csmall created (server dry run)")
	out = kubectl(t, "-n", ns, "get", "vmf", "--ignore-not-found")
	assert.Empty(t, strings.TrimSpace(out), "a dry run stores nothing")
	out = kubectl(t, "-n", ns, "apply", "--server-side", "-f", "testdata/instancetypes.yaml")
	for _, applied := range []string{
		"virtualmachineclusterinstancetype.instancetype.kubevirt.io/itest.small serverside-applied",
		"virtualmachineinstancetype.instancetype.kubevirt.io/csmall serverside-applied",
		"virtualmachineclusterpreference.instancetype.kubevirt.io/itest.linux serverside-applied",
		"virtualmachinepreference.instancetype.kubevirt.io/virtio serverside-applied",
	} {
		assert.Contains(t, out, applied)
	}
	t.Cleanup(func() {
		kubectl(t, "delete", "vmcf", "itest.small")
		kubectl(t, "delete", "vmcp", "itest.linux")
	})
	kubectl(t, "-n", ns, "apply", "-f", "testdata/instancetypes.yaml")

	for short, name := range map[string]string{"vmf": "csmall", "vminstancetype": "csmall", "vmp": "virtio", "vmpref": "virtio",
		"vmcf": "itest.small", "vmclusterinstancetype": "itest.small", "vmcp": "itest.linux"} {
		out = kubectl(t, "-n", ns, "get", short)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, "%s: %s", short, out)
		assert.Equal(t, []string{"NAME", "AGE"}, strings.Fields(lines[0]), short)
		assert.Equal(t, name, strings.Fields(lines[1])[0], short)
	}
	out = kubectl(t, "-n", ns, "get", "all", "-o", "name")
	assert.Contains(t, out, "virtualmachineinstancetype.instancetype.kubevirt.io/csmall", "namespaced kinds are in the all category")

	out = kubectl(t, "api-resources", "--api-group=instancetype.kubevirt.io", "--no-headers")
	scopes := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		// NAME SHORTNAMES APIVERSION NAMESPACED KIND
		scopes[fields[0]] = fields[len(fields)-2]
	}
	assert.Equal(t, map[string]string{"virtualmachineinstancetypes": "true", "virtualmachinepreferences": "true",
		"virtualmachineclusterinstancetypes": "false", "virtualmachineclusterpreferences": "false"}, scopes)

	out = kubectl(t, "explain", "virtualmachineclusterinstancetype.spec.cpu.guest")
	assert.Contains(t, out, "guest")
	assert.Contains(t, out, "integer")
	out = kubectl(t, "get", "vmcp", "itest.linux", "-o", "jsonpath={.spec.requirements.memory.guest}")
	assert.Equal(t, "512Mi", out)
}

// TestCommonCatalogue: the common instance types and preferences hangar-operator installs are
// accepted by virt-api, and VMs name them as KubeVirt's documentation does.
func TestCommonCatalogue(t *testing.T) {
	ctx := context.Background()
	client, _ := instancetypes(t)
	v1beta1 := client.InstancetypeV1beta1()
	t.Cleanup(func() {
		selector := metav1.ListOptions{LabelSelector: "instancetype.kubevirt.io/vendor=hangarvm.io"}
		assert.NoError(t, v1beta1.VirtualMachineClusterInstancetypes().DeleteCollection(ctx, metav1.DeleteOptions{}, selector))
		assert.NoError(t, v1beta1.VirtualMachineClusterPreferences().DeleteCollection(ctx, metav1.DeleteOptions{}, selector))
	})
	for _, o := range render.Catalogue() {
		var err error
		switch obj := o.Object.(type) {
		case *instancetypev1beta1.VirtualMachineClusterInstancetype:
			_, err = v1beta1.VirtualMachineClusterInstancetypes().Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
		case *instancetypev1beta1.VirtualMachineClusterPreference:
			_, err = v1beta1.VirtualMachineClusterPreferences().Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
		}
		require.NoError(t, err)
	}

	ns := "catalogue"
	vms := api.Client.KubevirtV1().VirtualMachines(ns)
	_, err := vms.Create(ctx, vmWithInstancetype("medium-fedora", "u1.medium", "fedora"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = vms.Create(ctx, vmWithInstancetype("nano-cirros", "u1.nano", "cirros"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = vms.Create(ctx, vmWithInstancetype("nano-fedora", "u1.nano", "fedora"), metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "fedora needs 2Gi, u1.nano has 512Mi: %v", err)
	_, err = vms.Create(ctx, vmWithInstancetype("dedicated", "cx1.medium", "rhel.9"), metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "got %v", err)
	assert.Contains(t, err.Error(), "spec.cpu.dedicatedCPUPlacement")

	raw, err := api.Client.KubevirtV1().RESTClient().Get().Namespace(ns).Resource("virtualmachines").Name("medium-fedora").
		SubResource("expand-spec").DoRaw(ctx)
	require.NoError(t, err)
	var expanded v1.VirtualMachine
	require.NoError(t, json.Unmarshal(raw, &expanded))
	domain := expanded.Spec.Template.Spec.Domain
	assert.Equal(t, "4Gi", domain.Memory.Guest.String())
	assert.True(t, *domain.Firmware.Bootloader.EFI.SecureBoot, "fedora boots with secure boot")
	assert.NotNil(t, domain.Features.SMM)
}
