//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	exportclient "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/launcherpod"
)

// TestMemoryDump takes memory dumps of a running VM with virtctl memory-dump, as KubeVirt's
// virtctl does (docs/hotplug.md): --create-claim makes a claim sized for the guest, the dump
// lands on it as an ELF core that holds a string the guest computed (never typed), the
// request goes Completed and the attachment pod goes; a second dump to the associated claim
// gets a file of its own; another claim is refused while one is associated; remove
// dissociates it. memory-dump download fetches the dump through an export of the claim.
func TestMemoryDump(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-memory-dump")
	_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways), Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: guestSpec()}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = hangar.KubevirtV1().VirtualMachines(ns).Delete(context.Background(), "vm", metav1.DeleteOptions{})
	})
	console := attach(t, ns, "vm", "console")
	vmi := waitVMI(t, ns, "vm", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	console.waitFor(t, banner, 120*time.Second)
	secret := utilrand.String(8)
	console.typeUntil(t, "m=HANGAR-DUMP-"+secret+"-$((6*7)); echo kept-$((6*7))", "kept-42")

	out, err := virtctl(t, "memory-dump", "get", "vm", "--claim-name=dump", "--create-claim", "-n", ns)
	require.NoError(t, err, out)
	assert.Contains(t, out, "PVC "+ns+"/dump created")
	assert.Contains(t, out, "Successfully submitted memory dump request of VM vm")
	completed := func() *v1.VirtualMachineMemoryDumpRequest {
		t.Helper()
		var req *v1.VirtualMachineMemoryDumpRequest
		require.Eventually(t, func() bool {
			vm, err := hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "vm", metav1.GetOptions{})
			require.NoError(t, err)
			req = vm.Status.MemoryDumpRequest
			return req != nil && (req.Phase == v1.MemoryDumpCompleted || req.Phase == v1.MemoryDumpFailed)
		}, 180*time.Second, time.Second, "the dump ends")
		require.Equal(t, v1.MemoryDumpCompleted, req.Phase, "%+v", req)
		require.NotNil(t, req.FileName)
		require.NotNil(t, req.StartTimestamp)
		require.NotNil(t, req.EndTimestamp)
		return req
	}
	first := completed()
	path := claimFile(t, ns, "dump", vmi.Status.NodeName, *first.FileName)
	core, err := elf.Open(path)
	require.NoError(t, err, "the dump is an ELF file")
	assert.Equal(t, elf.ET_CORE, core.Type)
	core.Close()
	content, err := os.ReadFile(path)
	require.NoError(t, err)
	size := int64(len(content))
	assert.GreaterOrEqual(t, size, int64(128<<20), "the guest's memory is in it")
	assert.True(t, bytes.Contains(content, []byte("HANGAR-DUMP-"+secret+"-42")), "the guest's string is in the dump")
	content = nil
	require.Eventually(t, func() bool {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1.AppLabel + "=" + launcherpod.HotplugAppLabelValue})
		require.NoError(t, err)
		return len(pods.Items) == 0
	}, 60*time.Second, time.Second, "the attachment pod goes")

	// virtctl memory-dump download: through an export of the claim, deleted afterwards.
	downloaded := filepath.Join(t.TempDir(), "vm.memory.dump")
	out, err = virtctl(t, "memory-dump", "download", "vm", "--output="+downloaded, "--port-forward", "-n", ns)
	require.NoError(t, err, out)
	got, err := os.ReadFile(downloaded)
	require.NoError(t, err)
	assert.Equal(t, size, int64(len(got)), "the whole dump is downloaded")
	assert.True(t, bytes.Contains(got, []byte("HANGAR-DUMP-"+secret+"-42")), "the guest's string is in the download")
	got = nil
	exports, err := exportclient.NewForConfig(config)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		list, err := exports.ExportV1beta1().VirtualMachineExports(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		return len(list.Items) == 0
	}, 30*time.Second, time.Second, "the download's export is deleted")

	out, err = virtctl(t, "memory-dump", "get", "vm", "--claim-name=other", "-n", ns)
	require.Error(t, err, out)
	assert.Contains(t, out, "while pvc [dump] is still associated")

	out, err = virtctl(t, "memory-dump", "get", "vm", "-n", ns)
	require.NoError(t, err, out)
	second := completed()
	assert.NotEqual(t, *first.FileName, *second.FileName, "a second dump, to a file of its own")
	claimFile(t, ns, "dump", vmi.Status.NodeName, *second.FileName)

	out, err = virtctl(t, "memory-dump", "remove", "vm", "-n", ns)
	require.NoError(t, err, out)
	require.Eventually(t, func() bool {
		vm, err := hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "vm", metav1.GetOptions{})
		require.NoError(t, err)
		return vm.Status.MemoryDumpRequest == nil
	}, 60*time.Second, time.Second, "the association goes")
	vmi, err = hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "vm", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, vmi.Spec.Volumes, len(guestSpec().Volumes), "the dump's volume left the instance")
	assert.Empty(t, vmi.Status.VolumeStatus)
	assert.Equal(t, v1.Running, vmi.Status.Phase, "the guest ran on")
}
