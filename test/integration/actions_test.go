package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// actionPath says where an action is served: as a subresource of the kind, or under
// KubeVirt's subresources.kubevirt.io group.
type actionPath struct {
	name string
	url  func(ns, resource, name, action string) string
	// acceptedBody is what a successful action answers with.
	acceptedBody string
}

var actionPaths = []actionPath{
	{"kubevirt.io", func(ns, resource, name, action string) string {
		return fmt.Sprintf("/apis/kubevirt.io/v1/namespaces/%s/%s/%s/%s", ns, resource, name, action)
	}, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":202}`},
	{"subresources.kubevirt.io", func(ns, resource, name, action string) string {
		return fmt.Sprintf("/apis/subresources.kubevirt.io/v1/namespaces/%s/%s/%s/%s", ns, resource, name, action)
	}, ""}, // KubeVirt answers 202 with no body
}

// put sends an action as KubeVirt's clients do and returns the status code and body.
func put(t *testing.T, path actionPath, ns, name, action, body string) (int, string) {
	t.Helper()
	var code int
	req := api.Client.Discovery().RESTClient().Put().AbsPath(path.url(ns, "virtualmachines", name, action))
	if body != "" {
		req = req.Body([]byte(body))
	}
	result := req.Do(context.Background()).StatusCode(&code)
	raw, _ := result.Raw()
	return code, string(raw)
}

func getVM(t *testing.T, ns, name string) *v1.VirtualMachine {
	t.Helper()
	vm, err := api.Client.KubevirtV1().VirtualMachines(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return vm
}

// runningInstance creates the instance a controller would have created, in phase Running.
func runningInstance(t *testing.T, ns, name string) *v1.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	vmi, err := api.Client.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI(name), metav1.CreateOptions{})
	require.NoError(t, err)
	vmi.Status.Phase = v1.Running
	vmi, err = api.Client.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
	return vmi
}

func requestActions(vm *v1.VirtualMachine) []v1.StateChangeRequestAction {
	var out []v1.StateChangeRequestAction
	for _, r := range vm.Status.StateChangeRequests {
		out = append(out, r.Action)
	}
	return out
}

func TestVirtualMachineActions(t *testing.T) {
	ctx := context.Background()
	for i, path := range actionPaths {
		t.Run(path.name, func(t *testing.T) {
			ns := fmt.Sprintf("actions-%d", i)
			vms := api.Client.KubevirtV1().VirtualMachines(ns)
			for name, strategy := range map[string]v1.VirtualMachineRunStrategy{
				"h-vm": v1.RunStrategyHalted, "a-vm": v1.RunStrategyAlways, "m-vm": v1.RunStrategyManual, "o-vm": v1.RunStrategyOnce,
			} {
				_, err := vms.Create(ctx, newVM(name, strategy), metav1.CreateOptions{})
				require.NoError(t, err)
			}

			// Halted: start switches the strategy on; a second start finds it Always.
			code, body := put(t, path, ns, "h-vm", "start", "")
			require.Equal(t, http.StatusAccepted, code, body)
			if path.acceptedBody == "" {
				assert.Empty(t, body)
			} else {
				assert.JSONEq(t, path.acceptedBody, body)
			}
			assert.Equal(t, v1.RunStrategyAlways, *getVM(t, ns, "h-vm").Spec.RunStrategy)
			code, body = put(t, path, ns, "h-vm", "start", "")
			assert.Equal(t, http.StatusConflict, code)
			assert.Contains(t, body, "Always does not support manual start requests")

			// Always: stop switches it off; restart needs an instance.
			code, body = put(t, path, ns, "a-vm", "restart", "{}")
			assert.Equal(t, http.StatusConflict, code)
			assert.Contains(t, body, "VM is not running")
			runningInstance(t, ns, "a-vm")
			code, body = put(t, path, ns, "a-vm", "restart", `{"gracePeriodSeconds":0}`)
			require.Equal(t, http.StatusAccepted, code, body)
			assert.Equal(t, []v1.StateChangeRequestAction{v1.StopRequest, v1.StartRequest}, requestActions(getVM(t, ns, "a-vm")))
			code, body = put(t, path, ns, "a-vm", "restart", "{}")
			assert.Equal(t, http.StatusConflict, code, "a second action while one is in flight")
			assert.Contains(t, body, "already in progress")
			code, body = put(t, path, ns, "a-vm", "stop", "")
			require.Equal(t, http.StatusAccepted, code, body)
			assert.Equal(t, v1.RunStrategyHalted, *getVM(t, ns, "a-vm").Spec.RunStrategy)

			// Manual: start queues a request; the dry run changes nothing.
			code, body = put(t, path, ns, "m-vm", "start", `{"kind":"StartOptions","apiVersion":"subresources.kubevirt.io/v1","dryRun":["All"]}`)
			require.Equal(t, http.StatusAccepted, code, body)
			assert.Empty(t, getVM(t, ns, "m-vm").Status.StateChangeRequests, "a dry run changes nothing")
			code, body = put(t, path, ns, "m-vm", "start", `{"paused":true}`)
			require.Equal(t, http.StatusAccepted, code, body)
			vm := getVM(t, ns, "m-vm")
			assert.Equal(t, []v1.StateChangeRequestAction{v1.StartRequest}, requestActions(vm))
			assert.Equal(t, "true", vm.Status.StateChangeRequests[0].Data["paused"])

			// Once: no start, no restart.
			code, _ = put(t, path, ns, "o-vm", "start", "")
			assert.Equal(t, http.StatusConflict, code)
			code, body = put(t, path, ns, "o-vm", "restart", "")
			assert.Equal(t, http.StatusConflict, code)
			assert.Contains(t, body, "does not support manual restart requests")

			// Bad input.
			code, _ = put(t, path, ns, "missing", "start", "")
			assert.Equal(t, http.StatusNotFound, code)
			code, _ = put(t, path, ns, "o-vm", "stop", `{"gracePeriod":"soon"}`)
			assert.Equal(t, http.StatusBadRequest, code)
			code, body = put(t, path, ns, "o-vm", "stop", `{"gracePeriod":9223372036854775807}`)
			assert.Equal(t, http.StatusBadRequest, code, "a grace period past the instance's bound: %s", body)
			code, _ = put(t, path, ns, "a-vm", "restart", `{"gracePeriodSeconds":30}`)
			assert.Equal(t, http.StatusBadRequest, code, "only a forced restart takes a grace period")
		})
	}
}

// TestConcurrentActions starts one Manual VM from many clients at once: exactly one wins.
func TestConcurrentActions(t *testing.T) {
	ns := "actions-race"
	_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(context.Background(), newVM("contended", v1.RunStrategyManual), metav1.CreateOptions{})
	require.NoError(t, err)
	const clients = 10
	codes := make(chan int, clients)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			code, _ := put(t, actionPaths[i%2], ns, "contended", "start", "")
			codes <- code
		}(i)
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	assert.Equal(t, map[int]int{http.StatusAccepted: 1, http.StatusConflict: clients - 1}, count)
	assert.Len(t, getVM(t, ns, "contended").Status.StateChangeRequests, 1)
}

// TestTypedActions drives the actions through the generated clientset's typed methods. A dry
// run goes in the options body, as KubeVirt defines it; one asked for in the query
// (UpdateOptions) is refused rather than ignored.
func TestTypedActions(t *testing.T) {
	ctx := context.Background()
	ns := "actions-typed"
	vms := api.Client.KubevirtV1().VirtualMachines(ns)
	_, err := vms.Create(ctx, newVM("typed", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)

	dryRun := []string{metav1.DryRunAll}
	status, err := vms.Start(ctx, "typed", &v1.StartOptions{DryRun: dryRun}, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(http.StatusAccepted), status.Code)
	assert.Equal(t, v1.RunStrategyHalted, *getVM(t, ns, "typed").Spec.RunStrategy, "a dry run changes nothing")
	_, err = vms.Start(ctx, "typed", &v1.StartOptions{}, metav1.UpdateOptions{DryRun: dryRun})
	require.True(t, apierrors.IsBadRequest(err), "%v", err)
	assert.Equal(t, v1.RunStrategyHalted, *getVM(t, ns, "typed").Spec.RunStrategy, "a dry run in the query is refused")
	for _, path := range actionPaths {
		var code int
		api.Client.Discovery().RESTClient().Put().AbsPath(path.url(ns, "virtualmachines", "typed", "start")).
			Param("dryRun", metav1.DryRunAll).Do(ctx).StatusCode(&code)
		assert.Equal(t, http.StatusBadRequest, code, path.name)
	}

	status, err = vms.Start(ctx, "typed", &v1.StartOptions{}, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, metav1.StatusSuccess, status.Status)
	assert.Equal(t, v1.RunStrategyAlways, *getVM(t, ns, "typed").Spec.RunStrategy)

	_, err = vms.Start(ctx, "typed", &v1.StartOptions{}, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "%v", err)
	_, err = vms.Restart(ctx, "typed", &v1.RestartOptions{}, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "restart needs an instance: %v", err)

	runningInstance(t, ns, "typed")
	_, err = vms.Restart(ctx, "typed", &v1.RestartOptions{}, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []v1.StateChangeRequestAction{v1.StopRequest, v1.StartRequest}, requestActions(getVM(t, ns, "typed")))
	_, err = vms.Stop(ctx, "typed", &v1.StopOptions{}, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.RunStrategyHalted, *getVM(t, ns, "typed").Spec.RunStrategy)

	// Pause needs a node agent; without one (as here) the instance's state is still checked
	// first, and a dry run never reaches the node.
	vmis := api.Client.KubevirtV1().VirtualMachineInstances(ns)
	_, err = vmis.Unpause(ctx, "typed", &v1.UnpauseOptions{}, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "%v", err)
	_, err = vmis.Pause(ctx, "typed", &v1.PauseOptions{DryRun: dryRun}, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = vmis.SoftReboot(ctx, "typed", &v1.SoftRebootOptions{DryRun: dryRun}, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = vmis.Pause(ctx, "missing", &v1.PauseOptions{}, metav1.UpdateOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}

// TestActionsAcceptPOST checks the kubevirt.io subresources take POST as well as PUT.
func TestActionsAcceptPOST(t *testing.T) {
	ns := "actions-post"
	_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(context.Background(), newVM("posted", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	var code int
	api.Client.KubevirtV1().RESTClient().Post().Namespace(ns).Resource("virtualmachines").Name("posted").SubResource("start").
		Body([]byte("{}")).Do(context.Background()).StatusCode(&code)
	assert.Equal(t, http.StatusAccepted, code)
	assert.Equal(t, v1.RunStrategyAlways, *getVM(t, ns, "posted").Spec.RunStrategy)
}

func TestStopShortensAGracePeriodUnderWay(t *testing.T) {
	ns := "actions-grace"
	ctx := context.Background()
	_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("slow", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	runningInstance(t, ns, "slow")
	code, body := put(t, actionPaths[1], ns, "slow", "stop", "")
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, body, "shorter graceperiod")

	code, body = put(t, actionPaths[1], ns, "slow", "stop", `{"gracePeriod":0}`)
	require.Equal(t, http.StatusAccepted, code, body)
	vmi, err := api.Client.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "slow", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(0), *vmi.Spec.TerminationGracePeriodSeconds)
	assert.Equal(t, []v1.StateChangeRequestAction{v1.StopRequest}, requestActions(getVM(t, ns, "slow")))
}

func TestSubresourcesGroupDiscovery(t *testing.T) {
	ctx := context.Background()
	groups, err := api.Client.Discovery().ServerGroups()
	require.NoError(t, err)
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	assert.Contains(t, names, "subresources.kubevirt.io")

	resources, err := api.Client.Discovery().ServerResourcesForGroupVersion("subresources.kubevirt.io/v1")
	require.NoError(t, err)
	var listed []string
	for _, r := range resources.APIResources {
		listed = append(listed, r.Name)
	}
	assert.Subset(t, listed, []string{"virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart"})

	raw, err := api.Client.Discovery().RESTClient().Get().AbsPath("/apis/subresources.kubevirt.io/v1/version").DoRaw(ctx)
	require.NoError(t, err)
	var info map[string]string
	require.NoError(t, json.Unmarshal(raw, &info))
	assert.NotEmpty(t, info["gitVersion"])
	assert.NotEmpty(t, info["goVersion"])

	// kubectl still maps the kinds to kubevirt.io.
	out := kubectl(t, "api-resources", "--api-group=kubevirt.io", "-o", "name")
	assert.Contains(t, out, "virtualmachines.kubevirt.io")
}
