package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/etcd"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestRestartLosesNothing restarts virt-api and its embedded etcd: every object survives with
// its UID and resourceVersion, and clients relist and watch on.
func TestRestartLosesNothing(t *testing.T) {
	ctx := context.Background()
	server := framework.StartVirtAPI(t)
	ns := "restart"
	vm, err := server.Client.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("durable", v1.RunStrategyAlways), metav1.CreateOptions{})
	require.NoError(t, err)
	vmi, err := server.Client.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("durable"), metav1.CreateOptions{})
	require.NoError(t, err)
	vmi.Status.Phase = v1.Scheduled
	_, err = server.Client.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	rs, err := server.Client.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, newReplicaSet("durable", 4), metav1.CreateOptions{})
	require.NoError(t, err)

	server.Restart(t)

	gotVM, err := server.Client.KubevirtV1().VirtualMachines(ns).Get(ctx, "durable", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, vm.UID, gotVM.UID)
	assert.Equal(t, vm.ResourceVersion, gotVM.ResourceVersion)
	gotVMI, err := server.Client.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "durable", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.Scheduled, gotVMI.Status.Phase)
	gotRS, err := server.Client.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Get(ctx, "durable", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(4), *gotRS.Spec.Replicas)
	assert.Equal(t, rs.UID, gotRS.UID)

	// Informers recover as they do from a kube-apiserver restart: relist, then watch from
	// the list's resourceVersion.
	list, err := server.Client.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	w, err := server.Client.KubevirtV1().VirtualMachineInstances(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	gotVMI.Status.Phase = v1.Running
	_, err = server.Client.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, gotVMI, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case ev := <-w.ResultChan():
		require.Equal(t, watch.Modified, ev.Type, "%+v", ev.Object)
		assert.Equal(t, v1.Running, ev.Object.(*v1.VirtualMachineInstance).Status.Phase)
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed watch saw nothing")
	}
}

// TestVirtAPIWaitsForEtcd starts virt-api before its etcd, and etcd only after longer than
// k8s.io/apiserver waits for a connection (20 s): virt-api keeps waiting rather than exiting
// (in a pod, an exit means the kubelet's growing back-off), and serves once etcd answers.
func TestVirtAPIWaitsForEtcd(t *testing.T) {
	port, err := framework.FreePort()
	require.NoError(t, err)
	dir := t.TempDir()
	var late *etcd.Server
	var lateErr error
	started := make(chan struct{})
	go func() {
		defer close(started)
		time.Sleep(25 * time.Second)
		late, lateErr = etcd.Start(etcd.Config{Dir: dir, ClientPort: port, UnsafeNoFsync: true})
	}()
	// Registered first, so it runs after virt-api has stopped.
	t.Cleanup(func() {
		<-started
		if late != nil {
			late.Stop()
		}
	})

	server := framework.StartVirtAPIWith(t, func(o *virtapi.Options) {
		o.EmbeddedEtcdDir = ""
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{fmt.Sprintf("http://127.0.0.1:%d", port)}
	})
	<-started
	require.NoError(t, lateErr)
	_, err = server.Client.KubevirtV1().VirtualMachines("late-etcd").Create(context.Background(), newVM("first", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
}
