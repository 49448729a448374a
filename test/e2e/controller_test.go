//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestController drives virt-controller as deployed (two replicas, one leading) with the real
// scheduler and kubelet. The node side (virt-handler) is not deployed yet: launcher pods are
// bound to the node, and run if the launcher image has been imported, but nothing takes the
// instance further, so instances reach Scheduled, and VMs Starting, and no further.
func TestController(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-controller")
	waitForDefaultServiceAccount(t, ns)
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, nodes.Items)

	token := serviceAccountToken(t, ns, "metrics-reader", true)
	t.Run("one replica leads", func(t *testing.T) {
		pods, err := kube.CoreV1().Pods("hangar").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=virt-controller"})
		require.NoError(t, err)
		require.Len(t, pods.Items, 2)
		lease, err := kube.CoordinationV1().Leases("hangar").Get(ctx, "virt-controller", metav1.GetOptions{})
		require.NoError(t, err)
		leaders := 0
		for _, p := range pods.Items {
			status := scrape(t, token, p, "leader_election_master_status")
			if strings.HasSuffix(status, " 1") {
				leaders++
				assert.True(t, strings.HasPrefix(*lease.Spec.HolderIdentity, p.Name+"_"), "the Lease names the leader %s", p.Name)
			}
		}
		assert.Equal(t, 1, leaders)
	})

	t.Run("a VM starts to Scheduled and stops", func(t *testing.T) {
		vms := hangar.KubevirtV1().VirtualMachines(ns)
		_, err := vms.Create(ctx, vm("web"), metav1.CreateOptions{})
		require.NoError(t, err)
		waitForStatus(t, ns, "web", v1.VirtualMachineStatusStopped)

		out, err := kubectl(t, "patch", "vm", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"runStrategy":"Always"}}`)
		require.NoError(t, err, out)
		waitForStatus(t, ns, "web", v1.VirtualMachineStatusStarting)

		var vmi *v1.VirtualMachineInstance
		waitUntil(t, 120*time.Second, "the instance Scheduled on a node", func() bool {
			vmi, err = hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "web", metav1.GetOptions{})
			return err == nil && vmi.Status.Phase == v1.Scheduled
		})
		var names []string
		for _, n := range nodes.Items {
			names = append(names, n.Name)
		}
		assert.Contains(t, names, vmi.Status.NodeName)
		pods := launcherPods(t, ns, vmi.UID)
		require.Len(t, pods, 1)
		pod := pods[0]
		assert.Equal(t, vmi.Status.NodeName, pod.Spec.NodeName, "bound by the scheduler")
		assert.Equal(t, launcherImage(t), pod.Spec.Containers[0].Image, "the image of the cluster configuration")
		assert.Equal(t, "true", envValue(pod.Spec.Containers[0], "HANGAR_USE_EMULATION"), "the local cluster runs guests under TCG")
		_, kvm := pod.Spec.Containers[0].Resources.Limits["devices.kubevirt.io/kvm"]
		assert.False(t, kvm, "no /dev/kvm asked for under emulation")
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				t.Logf("launcher container waiting: %s", cs.State.Waiting.Reason)
			}
		}
		waitForStatus(t, ns, "web", v1.VirtualMachineStatusStarting) // and no further without the node side

		// virtctl stop.
		err = hangar.Discovery().RESTClient().Put().
			AbsPath("/apis/subresources.kubevirt.io/v1/namespaces", ns, "virtualmachines", "web", "stop").Do(ctx).Error()
		require.NoError(t, err)
		waitUntil(t, 120*time.Second, "the instance and its pod gone", func() bool {
			_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && len(launcherPods(t, ns, vmi.UID)) == 0
		})
		waitForStatus(t, ns, "web", v1.VirtualMachineStatusStopped)
	})

	t.Run("kubectl scale vmirs", func(t *testing.T) {
		set := labels.Set{"set": "pool"}
		rs := &v1.VirtualMachineInstanceReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "pool"},
			Spec: v1.VirtualMachineInstanceReplicaSetSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: set},
				Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: set}, Spec: vm("x").Spec.Template.Spec},
			},
		}
		_, err := hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		require.NoError(t, err)
		replicas := func(want int) {
			t.Helper()
			waitUntil(t, 120*time.Second, fmt.Sprintf("%d instances with a pod each", want), func() bool {
				l, err := hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{LabelSelector: set.String()})
				if err != nil || len(l.Items) != want {
					return false
				}
				for _, vmi := range l.Items {
					if vmi.DeletionTimestamp != nil || len(launcherPods(t, ns, vmi.UID)) != 1 {
						return false
					}
				}
				out, err := kubectl(t, "get", "vmirs", "pool", "-n", ns, "-o", "jsonpath={.status.replicas}")
				return err == nil && out == fmt.Sprint(want)
			})
		}
		replicas(2)
		out, err := kubectl(t, "scale", "vmirs", "pool", "-n", ns, "--replicas=4")
		require.NoError(t, err, out)
		replicas(4)
		out, err = kubectl(t, "scale", "vmirs", "pool", "-n", ns, "--replicas=1")
		require.NoError(t, err, out)
		replicas(1)
	})
}

// waitForDefaultServiceAccount: pods are refused in a namespace without one.
func waitForDefaultServiceAccount(t *testing.T, ns string) {
	t.Helper()
	waitUntil(t, 60*time.Second, "the default ServiceAccount of "+ns, func() bool {
		_, err := kube.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil
	})
}

// waitForStatus waits until `kubectl get vm` shows status.
func waitForStatus(t *testing.T, ns, name string, status v1.VirtualMachinePrintableStatus) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 120*time.Second, true, func(context.Context) (bool, error) {
		out, err := kubectl(t, "get", "vm", name, "-n", ns, "--no-headers")
		last = out
		fields := strings.Fields(out)
		// NAME AGE STATUS READY
		return err == nil && len(fields) >= 3 && fields[2] == string(status), nil
	})
	require.NoError(t, err, "kubectl get vm %s: want STATUS %s, last output: %s", name, status, last)
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	require.NoError(t, err, "waiting for %s", what)
}

func launcherPods(t *testing.T, ns string, uid types.UID) []corev1.Pod {
	t.Helper()
	pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: labels.Set{
		v1.AppLabel: v1.LauncherAppLabelValue, v1.CreatedByLabel: string(uid)}.String()})
	require.NoError(t, err)
	return pods.Items
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// scrape returns the lines of a virt-controller pod's /metrics that start with prefix, read
// with token (HTTPS; the node reaches pod addresses directly).
func scrape(t *testing.T, token string, pod corev1.Pod, prefix string) string {
	t.Helper()
	require.NotEmpty(t, pod.Status.PodIP)
	status, body, err := getMetrics(pod.Status.PodIP, token)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, body)
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
