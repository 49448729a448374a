package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	launcherapi "github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestResetThroughVirtAPI: virtualmachineinstances/reset, as KubeVirt v1.5+ serves it (PUT,
// no body), and virtctl reset reach the launcher's reset call through the node agent; an
// instance that does not run, or is paused, is a conflict before any node is asked.
func TestResetThroughVirtAPI(t *testing.T) {
	ctx := context.Background()
	agent := newNodeAgent(t)
	server := framework.StartVirtAPIWith(t, func(o *virtapi.Options) { o.Handlers = agent.handlers })
	agent.serve(t, server.Client)

	ns := "reset"
	vmis := server.Client.KubevirtV1().VirtualMachineInstances(ns)
	vmi, err := vmis.Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	require.NoError(t, err)
	var resets atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+launcherapi.PathReset, func(w http.ResponseWriter, r *http.Request) {
		resets.Add(1)
		_ = json.NewEncoder(w).Encode(launcherapi.State{UID: string(vmi.UID), Phase: launcherapi.PhaseRunning})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	l := listenUnix(t, filepath.Join(agent.launcherPod(t, vmi), launcherapi.SocketName))
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	// Discovery lists the new subresources under KubeVirt's names.
	resources, err := server.Client.Discovery().ServerResourcesForGroupVersion("subresources.kubevirt.io/v1")
	require.NoError(t, err)
	var names []string
	for _, r := range resources.APIResources {
		names = append(names, r.Name)
	}
	assert.Subset(t, names, []string{"virtualmachineinstances/reset", "virtualmachineinstances/portforward", "virtualmachines/portforward"})

	put := func(group string) int {
		var code int
		server.Client.Discovery().RESTClient().Put().AbsPath("/apis/" + group + "/namespaces/" + ns + "/virtualmachineinstances/guest/reset").
			Do(ctx).StatusCode(&code)
		return code
	}
	assert.Equal(t, http.StatusConflict, put("subresources.kubevirt.io/v1"), "not running")
	code, out := runVirtctl(server.Kubeconfig, nil, "-n", ns, "reset", "guest")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "Failed to reset non-running VMI")
	assert.Zero(t, resets.Load())

	vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
	vmi, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the agent's cache sees the instance run
		return put("subresources.kubevirt.io/v1") == http.StatusAccepted
	}, 10*time.Second, 100*time.Millisecond)
	assert.Equal(t, int32(1), resets.Load())
	assert.Equal(t, http.StatusAccepted, put("kubevirt.io/v1"))
	code, out = runVirtctl(server.Kubeconfig, nil, "-n", ns, "reset", "guest")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "VMI guest was scheduled to reset")
	assert.Equal(t, int32(3), resets.Load())

	vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstancePaused, Status: "True"}}
	_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, http.StatusConflict, put("subresources.kubevirt.io/v1"), "paused")
	assert.Equal(t, int32(3), resets.Load())
}
