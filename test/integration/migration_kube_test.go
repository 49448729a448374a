//go:build kube

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// fakeLauncher creates a pod as virt-controller would for the instance, bound to node (no
// kubelet runs it), and records it in the instance's status as the controller does.
func fakeLauncher(t *testing.T, c *framework.Cluster, ns, vmi, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var pod *corev1.Pod
	// The namespace's default ServiceAccount appears a moment after the namespace.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "virt-launcher-" + vmi + "-",
				Labels: map[string]string{v1.AppLabel: v1.LauncherAppLabelValue}, Annotations: map[string]string{"kubevirt.io/domain": vmi}},
			Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{Name: "compute", Image: "hangar/virt-launcher:latest"}}},
		}, metav1.CreateOptions{})
		return err == nil, nil
	}))
	return pod
}

// evictableInstance creates an instance with the given strategy, Running on node with pod as
// its launcher, LiveMigratable as given.
func evictableInstance(t *testing.T, c *framework.Cluster, ns, name string, strategy *v1.EvictionStrategy, migratable corev1.ConditionStatus, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	vmi := newVMI(name)
	vmi.Spec.EvictionStrategy = strategy
	vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, vmi, metav1.CreateOptions{})
	require.NoError(t, err)
	vmi.Status.Phase, vmi.Status.NodeName = v1.Running, pod.Spec.NodeName
	vmi.Status.ActivePods = map[types.UID]string{pod.UID: pod.Spec.NodeName}
	vmi.Status.SetCondition(v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceIsMigratable, Status: migratable}, metav1.Now())
	_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func evict(c *framework.Cluster, ns, pod string) error {
	return c.Kube.PolicyV1().Evictions(ns).Evict(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}})
}

// TestMigrationThroughKubeAPIServer: migrations, the migrate action and the eviction webhook
// behind a real kube-apiserver, with the manifests' RBAC and webhook configuration.
func TestMigrationThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	require.NoError(t, c.RegisterEvictionWebhook())
	ctx := context.Background()

	t.Run("eviction of a LiveMigrate instance's launcher becomes an evacuation", func(t *testing.T) {
		ns := "evict-live"
		createNamespace(t, c.Kube, ns)
		pod := fakeLauncher(t, c, ns, "vm1", "node-a")
		evictableInstance(t, c, ns, "vm1", ptr.To(v1.EvictionStrategyLiveMigrate), corev1.ConditionTrue, pod)

		err := evict(c, ns, pod.Name)
		require.Error(t, err)
		assert.True(t, apierrors.IsTooManyRequests(err), "want 429, got %v", err)
		assert.Contains(t, err.Error(), `Eviction triggered evacuation of VMI "evict-live/vm1"`)
		vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "vm1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "node-a", vmi.Status.EvacuationNodeName)
		_, err = c.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		require.NoError(t, err, "the launcher pod must stay")

		// kubectl drain retries: still refused while the instance leaves.
		err = evict(c, ns, pod.Name)
		assert.True(t, apierrors.IsTooManyRequests(err), "want 429, got %v", err)
		assert.Contains(t, err.Error(), "Evacuation in progress")
	})

	t.Run("LiveMigrate but not migratable: refused with the reason, not marked", func(t *testing.T) {
		ns := "evict-stuck"
		createNamespace(t, c.Kube, ns)
		pod := fakeLauncher(t, c, ns, "vm1", "node-a")
		evictableInstance(t, c, ns, "vm1", ptr.To(v1.EvictionStrategyLiveMigrate), corev1.ConditionFalse, pod)
		err := evict(c, ns, pod.Name)
		assert.True(t, apierrors.IsTooManyRequests(err), "want 429, got %v", err)
		assert.Contains(t, err.Error(), "VMI vm1 is configured with an eviction strategy but is not live-migratable")
		vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "vm1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, vmi.Status.EvacuationNodeName)
	})

	t.Run("None: the launcher pod is evicted", func(t *testing.T) {
		ns := "evict-none"
		createNamespace(t, c.Kube, ns)
		pod := fakeLauncher(t, c, ns, "vm1", "node-a")
		evictableInstance(t, c, ns, "vm1", ptr.To(v1.EvictionStrategyNone), corev1.ConditionTrue, pod)
		require.NoError(t, evict(c, ns, pod.Name))
		vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "vm1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, vmi.Status.EvacuationNodeName)
	})

	t.Run("a pod dressed as the instance's launcher gets no say", func(t *testing.T) {
		ns := "evict-forged"
		createNamespace(t, c.Kube, ns)
		real := fakeLauncher(t, c, ns, "vm1", "node-a")
		evictableInstance(t, c, ns, "vm1", ptr.To(v1.EvictionStrategyLiveMigrate), corev1.ConditionTrue, real)
		forged := fakeLauncher(t, c, ns, "vm1", "node-a")
		require.NoError(t, evict(c, ns, forged.Name), "a pod that is not the instance's is evicted like any other")
		vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "vm1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, vmi.Status.EvacuationNodeName, "evicting a forged launcher must not move the VM")
	})

	// The framework's kube-apiserver calls webhooks with a client certificate, and virt-api
	// runs with --authorize-webhook-callers, as in the local cluster.
	t.Run("an eviction review from anyone but kube-apiserver is refused", func(t *testing.T) {
		ns := "evict-direct"
		createNamespace(t, c.Kube, ns)
		pod := fakeLauncher(t, c, ns, "vm1", "node-a")
		evictableInstance(t, c, ns, "vm1", ptr.To(v1.EvictionStrategyLiveMigrate), corev1.ConditionTrue, pod)
		review, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "forged", Operation: admissionv1.Create,
				Resource:    metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
				SubResource: "eviction", Namespace: ns, Name: pod.Name,
				Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + pod.Name + `"}}`)}},
		})
		require.NoError(t, err)
		mallory, err := c.CA.ClientCert("mallory", "mallory")
		require.NoError(t, err)

		for name, cert := range map[string]*framework.KeyPair{"anonymous": nil, "a user of the cluster": mallory} {
			req, err := http.NewRequest(http.MethodPost, c.VirtAPI.URL()+"/pod-eviction-validate", bytes.NewReader(review))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			code, body := direct(t, c, cert, req)
			assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, code, "%s: %s", name, body)
		}
		vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "vm1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, vmi.Status.EvacuationNodeName, "a forged review must not move the VM")
	})

	t.Run("kubectl get vmim prints KubeVirt's columns", func(t *testing.T) {
		ns := "vmim-columns"
		createNamespace(t, c.Kube, ns)
		vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("web"), metav1.CreateOptions{})
		require.NoError(t, err)
		vmi.Status.Phase = v1.Running
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		require.NoError(t, err)
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(ctx, newMigration("move-web", "web"), metav1.CreateOptions{})
		require.NoError(t, err)
		out, err := c.Kubectl("-n", ns, "get", "vmim")
		require.NoError(t, err, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, out)
		assert.Equal(t, []string{"NAME", "PHASE", "VMI"}, strings.Fields(lines[0]))
		assert.Equal(t, []string{"move-web", "web"}, strings.Fields(lines[1]))
		out, err = c.Kubectl("-n", ns, "get", "all")
		require.NoError(t, err, out)
		assert.Contains(t, out, "virtualmachineinstancemigration.kubevirt.io/move-web")
	})

	t.Run("migrating takes the kubevirt.io:migrate role; edit only reads migrations", func(t *testing.T) {
		ns := "migrate-rbac"
		createNamespace(t, c.Kube, ns)
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("vm", v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)
		vmi, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("vm"), metav1.CreateOptions{})
		require.NoError(t, err)
		vmi.Status.Phase = v1.Running
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
		require.NoError(t, err)
		bindRole(t, c.Kube, ns, "editor", "edit")
		bindRole(t, c.Kube, ns, "mover", "kubevirt.io:migrate")
		editor, mover := hangarAs(t, c, "editor"), hangarAs(t, c, "mover")

		_, err = editor.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		_, err = editor.KubevirtV1().VirtualMachineInstanceMigrations(ns).Create(ctx, newMigration("by-editor", "vm"), metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "edit must not create migrations: %v", err)
		for _, group := range []string{"kubevirt.io", "subresources.kubevirt.io"} {
			var code int
			editor.Discovery().RESTClient().Put().AbsPath("/apis/" + group + "/v1/namespaces/" + ns + "/virtualmachines/vm/migrate").
				Body([]byte(`{"dryRun":["All"]}`)).Do(ctx).StatusCode(&code)
			assert.Equal(t, http.StatusForbidden, code, group)
			mover.Discovery().RESTClient().Put().AbsPath("/apis/" + group + "/v1/namespaces/" + ns + "/virtualmachines/vm/migrate").
				Body([]byte(`{"dryRun":["All"]}`)).Do(ctx).StatusCode(&code)
			assert.Equal(t, http.StatusAccepted, code, group)
		}
		_, err = mover.KubevirtV1().VirtualMachines(ns).Migrate(ctx, "vm", &v1.MigrateOptions{}, metav1.UpdateOptions{})
		require.NoError(t, err)
		list, err := mover.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		assert.True(t, strings.HasPrefix(list.Items[0].Name, "kubevirt-migrate-vm-"))
		require.NoError(t, mover.KubevirtV1().VirtualMachineInstanceMigrations(ns).Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{}))
	})
}
