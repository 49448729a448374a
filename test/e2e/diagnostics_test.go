//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// podRecorder keeps, for a test's namespace, the end of each container's log at the moment
// it ends or its pod is deleted: a failed test's launcher pods (a migration's target, a
// drained source) are gone by the time CI saves the cluster's state, and their logs with them.
type podRecorder struct {
	mu   sync.Mutex
	seen map[string]bool // pod/container already captured
	logs []string
}

// recordPods starts a podRecorder on ns; if the test fails, its cleanup logs what was kept
// and the logs' ends of the pods still there, the namespace's migrations and its events.
func recordPods(t *testing.T, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &podRecorder{seen: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	pods := factory.Core().V1().Pods().Informer()
	capture := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			r.capture(ctx, pod, false)
		}
	}
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { capture(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			capture(obj)
		},
	})
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
		if t.Failed() {
			r.report(t, ns)
		}
	})
}

// capture keeps the logs of the pod's containers that have ended, or all of them once the
// pod is being deleted or now is true; each container once.
func (r *podRecorder) capture(ctx context.Context, pod *corev1.Pod, now bool) {
	for _, c := range pod.Status.ContainerStatuses {
		term := c.State.Terminated
		if term == nil && pod.DeletionTimestamp == nil && !now {
			continue
		}
		key := pod.Name + "/" + c.Name
		r.mu.Lock()
		done := r.seen[key]
		r.seen[key] = true
		r.mu.Unlock()
		if done {
			continue
		}
		state := fmt.Sprintf("pod %s", pod.Status.Phase)
		if pod.DeletionTimestamp != nil {
			state = "being deleted"
		}
		if term != nil {
			state = fmt.Sprintf("exit %d (%s) %s", term.ExitCode, term.Reason, term.Message)
		}
		tail := int64(60)
		raw, err := kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name,
			&corev1.PodLogOptions{Container: c.Name, TailLines: &tail, Timestamps: true}).DoRaw(ctx)
		text := string(raw)
		if err != nil {
			text = "logs: " + err.Error()
		}
		r.mu.Lock()
		r.logs = append(r.logs, fmt.Sprintf("pod %s on %s, container %s: %s; last lines:\n%s",
			pod.Name, pod.Spec.NodeName, c.Name, state, text))
		r.mu.Unlock()
	}
}

func (r *podRecorder) report(t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for i := range pods.Items {
			r.capture(ctx, &pods.Items[i], true)
		}
	}
	r.mu.Lock()
	for _, l := range r.logs {
		t.Log(l)
	}
	r.mu.Unlock()
	if migs, err := hangar.KubevirtV1().VirtualMachineInstanceMigrations(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, m := range migs.Items {
			line := fmt.Sprintf("migration %s of %s: %s", m.Name, m.Spec.VMIName, m.Status.Phase)
			if ms := m.Status.MigrationState; ms != nil {
				line += fmt.Sprintf(" (target pod %s on %s, started %v, failed %v: %s)",
					ms.TargetPod, ms.TargetNode, ms.StartTimestamp != nil, ms.Failed, ms.FailureReason)
			}
			t.Log(line)
		}
	}
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	sort.Slice(events.Items, func(i, j int) bool {
		return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp)
	})
	var b strings.Builder
	for _, e := range events.Items {
		fmt.Fprintf(&b, "%s %s %s/%s %s: %s\n", e.LastTimestamp.Format(time.TimeOnly), e.Type,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	t.Logf("events in %s:\n%s", ns, b.String())
}
