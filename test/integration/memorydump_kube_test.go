//go:build kube

package integration

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestMemoryDumpActions drives memorydump and removememorydump through kube-apiserver, in both
// groups, as KubeVirt's virtctl sends them: the claim checked at once (missing, block,
// read-only, too small: 422 naming claimName), the request recorded in the VM's status with
// the dump's file, the memory dump volume in the running instance (no disk of the guest), a
// second request while one runs refused, a view user refused, and removal taking the volume
// out of the instance. Memory dump volumes written by hand are refused, and so is a claim
// another instance uses (for addvolume too, unless the claim is ReadWriteMany); addvolume
// takes a block claim, as a file system one.
func TestMemoryDumpActions(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "memory-dump"
	createNamespace(t, c.Kube, ns)
	bindRole(t, c.Kube, ns, "operator", "edit")
	bindRole(t, c.Kube, ns, "watcher", "view")
	operator, watcher := hangarAs(t, c, "operator"), hangarAs(t, c, "watcher")

	claim := func(name, size string, mutate ...func(*corev1.PersistentVolumeClaim)) {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		}}
		for _, m := range mutate {
			m(pvc)
		}
		_, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// The guest has 128Mi: a dump needs (128Mi + 100Mi) × 1.055, 241Mi.
	claim("dump", "241Mi")
	claim("small", "240Mi")
	claim("block", "1Gi", func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) })
	claim("readonly", "1Gi", func(p *corev1.PersistentVolumeClaim) {
		p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}
	})
	claim("taken", "1Gi")
	claim("shared", "1Gi", func(p *corev1.PersistentVolumeClaim) {
		p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	})
	// Another instance has "taken" and "shared" as disks.
	other := newVMI("other")
	for _, name := range []string{"taken", "shared"} {
		other.Spec.Volumes = append(other.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}})
	}
	_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("guest", v1.RunStrategyManual), metav1.CreateOptions{})
	require.NoError(t, err)
	put := func(client versioned.Interface, group, action, body string) (int, string) {
		var code int
		path := fmt.Sprintf("/apis/%s/v1/namespaces/%s/virtualmachines/guest/%s", group, ns, action)
		req := client.KubevirtV1().RESTClient().Put().AbsPath(path)
		if body != "" {
			req = req.Body([]byte(body))
		}
		raw, _ := req.Do(ctx).StatusCode(&code).Raw()
		return code, string(raw)
	}

	code, body := put(operator, "subresources.kubevirt.io", "memorydump", `{"claimName":"dump"}`)
	assert.Equal(t, http.StatusConflict, code, "no instance runs: %s", body)

	vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	require.NoError(t, err)
	vmi.Status.Phase = v1.Running
	_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)

	for _, tc := range []struct{ body, want string }{
		{`{}`, "claimName: Required value"},
		{`{"claimName":"missing"}`, "claimName: Not found"},
		{`{"claimName":"small"}`, "is less than the 241Mi the dump needs"},
		{`{"claimName":"block"}`, "not a block claim"},
		{`{"claimName":"readonly"}`, "the claim is read-only"},
		{`{"claimName":"Not_A_Label"}`, "claimName: Invalid value"},
		{`{"claimName":"taken"}`, "instance other uses this claim (volume taken)"},
		{`{"claimName":"shared"}`, "instance other uses this claim (volume shared)"},
	} {
		code, body := put(operator, "subresources.kubevirt.io", "memorydump", tc.body)
		assert.Equal(t, http.StatusUnprocessableEntity, code, tc.body)
		assert.Contains(t, body, tc.want, tc.body)
	}
	code, body = put(watcher, "subresources.kubevirt.io", "memorydump", `{"claimName":"dump"}`)
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Nil(t, getVMAs(t, c, ns).Status.MemoryDumpRequest, "nothing recorded for refused requests")

	code, body = put(operator, "subresources.kubevirt.io", "memorydump", `{"claimName":"dump"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	req := getVMAs(t, c, ns).Status.MemoryDumpRequest
	require.NotNil(t, req)
	assert.Equal(t, "dump", req.ClaimName)
	assert.Equal(t, v1.MemoryDumpAssociating, req.Phase)
	require.NotNil(t, req.FileName)
	assert.Regexp(t, `^guest-dump-[0-9]{8}-[0-9]{6}\.memory\.dump$`, *req.FileName)
	vmi, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "guest", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, vmi.Spec.Volumes, 2)
	assert.Equal(t, "dump", vmi.Spec.Volumes[1].MemoryDump.ClaimName)
	assert.Len(t, vmi.Spec.Domain.Devices.Disks, 1, "a memory dump's volume is no disk")
	require.Len(t, vmi.Status.VolumeStatus, 1)
	assert.Equal(t, *req.FileName, vmi.Status.VolumeStatus[0].MemoryDumpVolume.TargetFileName)

	code, body = put(operator, "kubevirt.io", "memorydump", `{"claimName":"dump"}`)
	assert.Equal(t, http.StatusConflict, code, body)
	assert.Contains(t, body, "already in progress")
	code, body = put(operator, "subresources.kubevirt.io", "memorydump", `{"claimName":"small"}`)
	assert.Equal(t, http.StatusConflict, code, body)

	vmiAction := func(action, body string) (int, string) {
		var code int
		raw, _ := operator.KubevirtV1().RESTClient().Put().
			AbsPath(fmt.Sprintf("/apis/subresources.kubevirt.io/v1/namespaces/%s/virtualmachineinstances/guest/%s", ns, action)).
			Body([]byte(body)).Do(ctx).StatusCode(&code).Raw()
		return code, string(raw)
	}
	// The instance's own removevolume does not take a dump's volume.
	code, body = vmiAction("removevolume", `{"name":"dump"}`)
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Contains(t, body, "removememorydump")
	// addvolume: a claim another instance writes is refused, unless it is ReadWriteMany; the
	// dump's claim is the instance's already.
	hotplug := func(volume, claim string) string {
		return fmt.Sprintf(`{"name":%q,"disk":{"disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":%q}}}`, volume, claim)
	}
	code, body = vmiAction("addvolume", hotplug("hot", "taken"))
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Contains(t, body, "volumeSource.persistentVolumeClaim.claimName")
	assert.Contains(t, body, "instance other uses this claim")
	code, body = vmiAction("addvolume", hotplug("hot", "dump"))
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	code, body = vmiAction("addvolume", hotplug("blk", "block"))
	assert.Equal(t, http.StatusAccepted, code, body)
	code, body = vmiAction("addvolume", hotplug("hot", "shared"))
	assert.Equal(t, http.StatusAccepted, code, body)

	code, body = put(operator, "kubevirt.io", "removememorydump", "")
	require.Equal(t, http.StatusAccepted, code, body)
	req = getVMAs(t, c, ns).Status.MemoryDumpRequest
	require.NotNil(t, req)
	assert.Equal(t, v1.VirtualMachineMemoryDumpRequest{ClaimName: "dump", Phase: v1.MemoryDumpDissociating, Remove: true}, *req)
	vmi, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "guest", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, vmi.Spec.Volumes, 3, "the dump's volume left the instance (the root disk and the two hotplugged ones stay)")
	code, body = put(operator, "subresources.kubevirt.io", "removememorydump", "")
	assert.Equal(t, http.StatusConflict, code, body)

	// By hand, a memory dump volume is refused, in an instance or a VM's template.
	byHand := newVMI("by-hand")
	byHand.Spec.Volumes = append(byHand.Spec.Volumes, v1.Volume{Name: "dump", VolumeSource: v1.VolumeSource{MemoryDump: &v1.MemoryDumpVolumeSource{
		PersistentVolumeClaimVolumeSource: v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "dump"}, Hotpluggable: true}}}})
	_, err = operator.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, byHand, metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
	assert.Contains(t, err.Error(), "spec.volumes[1].memoryDump: Forbidden")
	vm := newVM("by-hand", v1.RunStrategyHalted)
	vm.Spec.Template.Spec.Volumes = byHand.Spec.Volumes
	_, err = operator.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.template.spec.volumes[1].memoryDump: Forbidden")
}

func getVMAs(t *testing.T, c *framework.Cluster, ns string) *v1.VirtualMachine {
	t.Helper()
	vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(context.Background(), "guest", metav1.GetOptions{})
	require.NoError(t, err)
	return vm
}
