//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestComponentRestarts deletes virt-api pods (one, then all) and the etcd pod, then takes
// etcd away for a while: no object is lost, and clients carry on once the replacements are
// ready.
func TestComponentRestarts(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-restart")
	vms := hangar.KubevirtV1().VirtualMachines(ns)
	const count = 20
	for i := 0; i < count; i++ {
		_, err := vms.Create(ctx, vm(vmName(i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}

	virtAPI := "app.kubernetes.io/name=virt-api"
	etcd := "app.kubernetes.io/name=hangar-etcd"

	t.Run("one virt-api pod", func(t *testing.T) {
		victim := hangarPods(t, virtAPI)[0].Name
		require.NoError(t, kube.CoreV1().Pods("hangar").Delete(ctx, victim, metav1.DeleteOptions{}))
		// The other replica serves throughout.
		for i := 0; i < 20; i++ {
			list, err := vms.List(ctx, metav1.ListOptions{})
			require.NoError(t, err, "a request during the restart failed")
			require.Len(t, list.Items, count)
			time.Sleep(100 * time.Millisecond)
		}
		waitReady(t, virtAPI, 2)
	})

	t.Run("every virt-api pod", func(t *testing.T) {
		require.NoError(t, kube.CoreV1().Pods("hangar").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: virtAPI}))
		waitReady(t, virtAPI, 2)
		assertAllThere(t, count)
	})

	t.Run("etcd", func(t *testing.T) {
		require.NoError(t, kube.CoreV1().Pods("hangar").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: etcd}))
		waitReady(t, etcd, 1)
		assertAllThere(t, count)
		// The tests after this one must find the API as they would anywhere: both virt-api
		// replicas ready and writes (which need etcd, unlike lists from the watch cache)
		// succeeding one after another, with kube-apiserver routing to the APIService.
		waitReady(t, virtAPI, 2)
		writesSettle(t, ns, vmName(0))
	})

	// etcd away for longer than virt-api's liveness probe tolerates and than k8s.io/apiserver
	// waits for a connection at start: no virt-api restarts, neither the running one nor one
	// started meanwhile, and both serve as soon as etcd is back.
	t.Run("etcd away", func(t *testing.T) {
		restarts := func() map[string]int32 {
			counts := map[string]int32{}
			for _, p := range hangarPods(t, virtAPI) {
				for _, c := range p.Status.ContainerStatuses {
					counts[p.Name] += c.RestartCount
				}
			}
			return counts
		}
		before := restarts()
		scaleEtcd(t, 0)
		t.Cleanup(func() { scaleEtcd(t, 1) })
		waitReady(t, etcd, 0)
		require.NoError(t, kube.CoreV1().Pods("hangar").Delete(ctx, hangarPods(t, virtAPI)[0].Name, metav1.DeleteOptions{}))
		// Liveness fails after three probes 10 s apart; k8s.io/apiserver gives up dialling
		// after 20 s.
		time.Sleep(45 * time.Second)
		scaleEtcd(t, 1)
		waitReady(t, etcd, 1)
		waitReady(t, virtAPI, 2)
		writesSettle(t, ns, vmName(0))
		for name, count := range restarts() {
			assert.Equal(t, before[name], count, "restarts of %s", name)
		}
	})
}

// scaleEtcd sets the replicas of Hangar's etcd StatefulSet.
func scaleEtcd(t *testing.T, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := kube.AppsV1().StatefulSets("hangar").Patch(context.Background(), "hangar-etcd", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// writesSettle waits until ten writes in a row succeed.
func writesSettle(t *testing.T, ns, name string) {
	t.Helper()
	streak := 0
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 120*time.Second, true, func(ctx context.Context) (bool, error) {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.hangar.io/write":"%d"}}}`, time.Now().UnixNano())
		if _, err := hangar.KubevirtV1().VirtualMachines(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			streak = 0
			return false, nil
		}
		streak++
		return streak == 10, nil
	})
	require.NoError(t, err, "writes did not settle after the restarts")
}

func vmName(i int) string { return "durable-" + string(rune('a'+i)) }

// assertAllThere waits until the API answers again and checks every VM is there.
func assertAllThere(t *testing.T, count int) {
	t.Helper()
	var items int
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 120*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := hangar.KubevirtV1().VirtualMachines("e2e-restart").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		items = len(list.Items)
		return true, nil
	})
	require.NoError(t, err, "the API did not come back")
	assert.Equal(t, count, items, "no VM is lost")
}

// waitReady waits for the given number of ready pods, none of them terminating.
func waitReady(t *testing.T, selector string, want int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 180*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods("hangar").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				return false, nil
			}
			if podReady(&p) {
				ready++
			}
		}
		return ready == want, nil
	})
	require.NoError(t, err, "pods %s not ready", selector)
}

// hangarPods are the pods of Hangar's namespace the selector picks.
func hangarPods(t *testing.T, selector string) []corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods("hangar").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	return list.Items
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
