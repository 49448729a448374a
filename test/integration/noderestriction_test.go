//go:build kube

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// handlerUser is virt-handler's ServiceAccount, as artifacts/ deploy it.
const handlerUser = "system:serviceaccount:hangar:virt-handler"

// applyHandlerRBAC applies artifacts/install/rbac/virt-handler.yaml (nothing if it held a DaemonSet):
// the ServiceAccount, the ClusterRole and its binding, as deployed.
func applyHandlerRBAC(t *testing.T, c *framework.Cluster) {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "artifacts/install/rbac/virt-handler.yaml"))
	require.NoError(t, err)
	var docs []string
	kinds := map[string]bool{}
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		for _, line := range strings.Split(doc, "\n") {
			if kind, ok := strings.CutPrefix(line, "kind: "); ok {
				kinds[kind] = true
				if kind != "DaemonSet" {
					docs = append(docs, doc)
				}
			}
		}
	}
	require.True(t, kinds["ServiceAccount"] && kinds["ClusterRole"] && kinds["ClusterRoleBinding"], "the manifest has %v", kinds)
	path := filepath.Join(t.TempDir(), "virt-handler-rbac.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644))
	out, err := c.Kubectl("apply", "-f", path)
	require.NoError(t, err, out)
}

// handlerClient is a client with a token of virt-handler's ServiceAccount, bound to pod when
// it is not nil, as the kubelet gives the handler's pod its token.
func handlerClient(t *testing.T, c *framework.Cluster, pod *corev1.Pod) versioned.Interface {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	token, err := c.Kube.CoreV1().ServiceAccounts("hangar").CreateToken(context.Background(), "virt-handler", req, metav1.CreateOptions{})
	require.NoError(t, err)
	client, err := versioned.NewForConfig(&rest.Config{Host: c.URL, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.PEM},
		BearerToken: token.Status.Token, QPS: -1})
	require.NoError(t, err)
	return client
}

// handlerPod creates a virt-handler pod bound to node (no kubelet runs it: the token only
// needs the pod object and its spec.nodeName).
func handlerPod(t *testing.T, c *framework.Cluster, node string) *corev1.Pod {
	t.Helper()
	pod, err := c.Kube.CoreV1().Pods("hangar").Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-handler-" + node},
		Spec: corev1.PodSpec{
			ServiceAccountName: "virt-handler",
			NodeName:           node,
			Containers:         []corev1.Container{{Name: "virt-handler", Image: "hangar/virt-handler:latest"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return pod
}

// TestNodeRestriction: virt-handler's identity behind kube-apiserver, with its real RBAC and a
// token bound to its pod on node-a, may read and write the status of node-a's instances only:
// every other write, any other node's instance, moving an instance and reading beyond its node
// are refused with 403, through PUT and every kind of PATCH; its ServiceAccount reads no Secret.
func TestNodeRestriction(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	applyHandlerRBAC(t, c)
	ns := "tenant"
	createNamespace(t, c.Kube, ns)

	// Instances as virt-controller leaves them: Scheduled to node-a or node-b, or not yet.
	admin := c.Hangar.KubevirtV1().VirtualMachineInstances(ns)
	schedule := func(name, node string) *v1.VirtualMachineInstance {
		vmi, err := admin.Create(ctx, newVMI(name), metav1.CreateOptions{})
		require.NoError(t, err)
		if node == "" {
			return vmi
		}
		vmi.Status.Phase, vmi.Status.NodeName = v1.Scheduled, node
		vmi, err = admin.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		require.NoError(t, err)
		return vmi
	}
	onA, onB := schedule("on-a", "node-a"), schedule("on-b", "node-b")
	schedule("pending", "")

	pod := handlerPod(t, c, "node-a")
	handler := handlerClient(t, c, pod).KubevirtV1()
	vmis := handler.VirtualMachineInstances(ns)
	forbidden := func(t *testing.T, err error, want string) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
		assert.Contains(t, err.Error(), want)
	}
	onNodeA := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.nodeName", "node-a").String()}

	t.Run("reads: its node's instances, through a selected list and watch", func(t *testing.T) {
		list, err := vmis.List(ctx, onNodeA)
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		assert.Equal(t, "on-a", list.Items[0].Name)
		all, err := handler.VirtualMachineInstances(metav1.NamespaceAll).List(ctx, onNodeA)
		require.NoError(t, err, "across namespaces, as its informer lists")
		assert.Len(t, all.Items, 1)

		w, err := vmis.Watch(ctx, onNodeA)
		require.NoError(t, err)
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			assert.Equal(t, "on-a", ev.Object.(*v1.VirtualMachineInstance).Name)
		case <-time.After(10 * time.Second):
			t.Fatal("no event on the handler's watch")
		}

		_, err = vmis.List(ctx, metav1.ListOptions{})
		forbidden(t, err, "select status.nodeName=node-a")
		_, err = vmis.List(ctx, metav1.ListOptions{FieldSelector: "status.nodeName=node-b"})
		forbidden(t, err, "only the instances on its node")
		_, err = vmis.Watch(ctx, metav1.ListOptions{FieldSelector: "status.nodeName!=node-a"})
		forbidden(t, err, "only the instances on its node")
	})

	t.Run("status of its own node's instance: PUT and PATCH", func(t *testing.T) {
		vmi := onA.DeepCopy()
		vmi.Status.Phase = v1.Running
		updated, err := vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.Running, updated.Status.Phase)

		for _, p := range []struct {
			pt   types.PatchType
			body string
		}{
			{types.MergePatchType, `{"status":{"reason":"merge"}}`},
			{types.StrategicMergePatchType, `{"status":{"reason":"strategic"}}`},
			{types.JSONPatchType, `[{"op":"replace","path":"/status/reason","value":"json"}]`},
		} {
			patched, err := vmis.Patch(ctx, "on-a", p.pt, []byte(p.body), metav1.PatchOptions{}, "status")
			require.NoError(t, err, p.pt)
			assert.Equal(t, v1.Running, patched.Status.Phase)
		}
		patched, err := vmis.Patch(ctx, "on-a", types.ApplyPatchType,
			[]byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"on-a"},"status":{"nodeName":"node-a","reason":"applied"}}`),
			metav1.PatchOptions{FieldManager: "virt-handler", Force: ptr.To(true)}, "status")
		require.NoError(t, err, "server-side apply")
		assert.Equal(t, "applied", patched.Status.Reason)
		onA = patched
	})

	t.Run("status of another node's instance: 403", func(t *testing.T) {
		vmi := onB.DeepCopy()
		vmi.Status.Phase = v1.Failed
		_, err := vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		forbidden(t, err, `is on node "node-b"`)
		// Claiming the instance is on its node changes nothing: the stored instance decides.
		vmi.Status.NodeName = "node-a"
		_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		forbidden(t, err, `is on node "node-b"`)
		for _, p := range []struct {
			pt   types.PatchType
			body string
		}{
			{types.MergePatchType, `{"status":{"phase":"Failed"}}`},
			{types.StrategicMergePatchType, `{"status":{"phase":"Failed"}}`},
			{types.JSONPatchType, `[{"op":"replace","path":"/status/phase","value":"Failed"}]`},
			{types.ApplyPatchType, `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"on-b"},"status":{"phase":"Failed"}}`},
		} {
			opts := metav1.PatchOptions{}
			if p.pt == types.ApplyPatchType {
				opts = metav1.PatchOptions{FieldManager: "virt-handler", Force: ptr.To(true)}
			}
			_, err := vmis.Patch(ctx, "on-b", p.pt, []byte(p.body), opts, "status")
			forbidden(t, err, `is on node "node-b"`)
		}
		_, err = vmis.Patch(ctx, "pending", types.MergePatchType, []byte(`{"status":{"nodeName":"node-a","phase":"Scheduled"}}`), metav1.PatchOptions{}, "status")
		forbidden(t, err, "on no node yet")

		got, err := admin.Get(ctx, "on-b", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.Scheduled, got.Status.Phase, "untouched")
		got, err = admin.Get(ctx, "pending", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, got.Status.NodeName, "untouched")
	})

	t.Run("moving its instance to another node: 403", func(t *testing.T) {
		vmi := onA.DeepCopy()
		vmi.Status.NodeName = "node-b"
		_, err := vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		forbidden(t, err, "cannot move an instance to another node")
		_, err = vmis.Patch(ctx, "on-a", types.MergePatchType, []byte(`{"status":{"nodeName":"node-b"}}`), metav1.PatchOptions{}, "status")
		forbidden(t, err, "cannot move an instance to another node")
		_, err = vmis.Patch(ctx, "on-a", types.JSONPatchType, []byte(`[{"op":"remove","path":"/status/nodeName"}]`), metav1.PatchOptions{}, "status")
		forbidden(t, err, "cannot move an instance to another node")
		got, err := admin.Get(ctx, "on-a", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "node-a", got.Status.NodeName)
	})

	t.Run("metadata through the status: 403", func(t *testing.T) {
		_, err := vmis.Patch(ctx, "on-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"stolen":"yes"}}}`), metav1.PatchOptions{}, "status")
		forbidden(t, err, "metadata.labels may not change")
		_, err = vmis.Patch(ctx, "on-a", types.MergePatchType, []byte(`{"metadata":{"annotations":{"stolen":"yes"}}}`), metav1.PatchOptions{}, "status")
		forbidden(t, err, "metadata.annotations may not change")
	})

	// Everything else the handler might try; kube-apiserver's RBAC refuses it first.
	vmi := onA.DeepCopy()
	vmi.Labels = map[string]string{"stolen": "yes"}
	attempts := []struct {
		what string
		call func() error
	}{
		{"get its own", func() error { _, err := vmis.Get(ctx, "on-a", metav1.GetOptions{}); return err }},
		{"get another node's", func() error { _, err := vmis.Get(ctx, "on-b", metav1.GetOptions{}); return err }},
		{"update the labels", func() error { _, err := vmis.Update(ctx, vmi, metav1.UpdateOptions{}); return err }},
		{"patch the spec", func() error {
			_, err := vmis.Patch(ctx, "on-a", types.MergePatchType, []byte(`{"spec":{"hostname":"x"}}`), metav1.PatchOptions{})
			return err
		}},
		{"create", func() error {
			_, err := vmis.Create(ctx, newVMI("made-by-handler"), metav1.CreateOptions{})
			return err
		}},
		{"delete", func() error { return vmis.Delete(ctx, "on-a", metav1.DeleteOptions{}) }},
		{"delete its node's", func() error { return vmis.DeleteCollection(ctx, metav1.DeleteOptions{}, onNodeA) }},
		{"list VMs", func() error { _, err := handler.VirtualMachines(ns).List(ctx, metav1.ListOptions{}); return err }},
		{"create a VM", func() error {
			_, err := handler.VirtualMachines(ns).Create(ctx, newVM("vm", v1.RunStrategyHalted), metav1.CreateOptions{})
			return err
		}},
		{"create a replica set", func() error {
			_, err := handler.VirtualMachineInstanceReplicaSets(ns).Create(ctx, newReplicaSet("rs", 1), metav1.CreateOptions{})
			return err
		}},
		{"pause", func() error {
			return handler.RESTClient().Put().AbsPath("/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/on-a/pause").
				Body([]byte("{}")).Do(ctx).Error()
		}},
	}

	t.Run("the main resource and other kinds: 403 from RBAC", func(t *testing.T) {
		for _, a := range attempts {
			forbidden(t, a.call(), "User \""+handlerUser+"\" cannot")
		}
	})

	t.Run("even with edit in the namespace: 403 from virt-api", func(t *testing.T) {
		// A cluster admin's mistake, or an aggregated role that grows: RBAC allows, virt-api's
		// node restriction still refuses.
		bindRole(t, c.Kube, ns, handlerUser, "edit")
		defer func() {
			require.NoError(t, c.Kube.RbacV1().RoleBindings(ns).Delete(ctx, handlerUser+"-edit", metav1.DeleteOptions{}))
		}()
		require.Eventually(t, func() bool {
			err := attempts[0].call()
			return err != nil && strings.Contains(err.Error(), "may only list and watch")
		}, 30*time.Second, 100*time.Millisecond, "RBAC lets the get through to virt-api")
		for _, a := range attempts {
			forbidden(t, a.call(), "may only list and watch the instances on its node and update their status")
		}
		got, err := admin.Get(ctx, "on-a", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, got.Labels, "untouched")
		assert.Empty(t, got.Spec.Hostname, "untouched")
	})

	t.Run("a token bound to no node: 403", func(t *testing.T) {
		unbound := handlerClient(t, c, nil).KubevirtV1().VirtualMachineInstances(ns)
		vmi := onA.DeepCopy()
		vmi.Status.Reason = "unbound"
		_, err := unbound.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		forbidden(t, err, "names no node")
		_, err = unbound.Patch(ctx, "on-a", types.MergePatchType, []byte(`{"status":{"reason":"unbound"}}`), metav1.PatchOptions{}, "status")
		forbidden(t, err, "names no node")
		_, err = unbound.List(ctx, onNodeA)
		forbidden(t, err, "names no node")
	})

	t.Run("another node's handler writes its own", func(t *testing.T) {
		handlerB := handlerClient(t, c, handlerPod(t, c, "node-b")).KubevirtV1().VirtualMachineInstances(ns)
		_, err := handlerB.Patch(ctx, "on-b", types.MergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status")
		require.NoError(t, err)
		_, err = handlerB.Patch(ctx, "on-a", types.MergePatchType, []byte(`{"status":{"phase":"Failed"}}`), metav1.PatchOptions{}, "status")
		forbidden(t, err, `is on node "node-a"`)
	})

	t.Run("the token dies with its pod", func(t *testing.T) {
		require.NoError(t, c.Kube.CoreV1().Pods("hangar").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
		require.Eventually(t, func() bool {
			_, err := vmis.List(ctx, onNodeA)
			return apierrors.IsUnauthorized(err)
		}, 30*time.Second, 200*time.Millisecond, "a token bound to a deleted pod is refused")
	})

	t.Run("RBAC: no Secrets, only instances and their status", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"get", "secrets", "-A"}, "no"},
			{[]string{"list", "secrets", "-A"}, "no"},
			{[]string{"get", "secrets", "-n", ns}, "no"},
			{[]string{"list", "virtualmachineinstances.kubevirt.io", "-A"}, "yes"},
			{[]string{"watch", "virtualmachineinstances.kubevirt.io", "-A"}, "yes"},
			{[]string{"update", "virtualmachineinstances.kubevirt.io", "--subresource=status", "-A"}, "yes"},
			{[]string{"update", "virtualmachineinstances.kubevirt.io", "-A"}, "no"},
			{[]string{"get", "virtualmachineinstances.kubevirt.io", "-A"}, "no"},
			{[]string{"create", "pods", "-A"}, "no"},
		} {
			out, _ := c.Kubectl(append(append([]string{"auth", "can-i"}, tt.args...), "--as", handlerUser)...)
			assert.Equal(t, tt.want, strings.TrimSpace(out), fmt.Sprint(tt.args))
		}
	})
}
