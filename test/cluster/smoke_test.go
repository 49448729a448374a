//go:build cluster

// Package cluster checks the local cluster of hack/cluster as a platform would before running
// anything on it: every node Ready and running pods, pods reaching each other across nodes and
// Services by name, a DaemonSet once per node, a drain moving a Deployment's pods, dynamic
// volumes. Run with hack/cluster/smoke.sh (needs hack/cluster/up.sh; KUBECONFIG defaults to
// _cluster/kubeconfig).
package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/test/integration/framework"
)

const busybox = "hangar.local/busybox:v2"

var (
	kubeconfig string
	kube       kubernetes.Interface
)

func TestMain(m *testing.M) {
	kubeconfig = os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(framework.RepoRoot(), "_cluster", "kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "no cluster (%v): run hack/cluster/up.sh\n", err)
		os.Exit(1)
	}
	kube = kubernetes.NewForConfigOrDie(cfg)
	os.Exit(m.Run())
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(framework.RepoRoot(), "_output", "bin", "kubectl")
	out, err := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return string(out)
}

func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	_ = kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	require.Eventually(t, func() bool {
		_, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 90*time.Second, 250*time.Millisecond)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	require.Eventually(t, func() bool {
		_, err := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "the default ServiceAccount")
	return name
}

func readyNodes(t *testing.T) []corev1.Node {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var ready []corev1.Node
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !n.Spec.Unschedulable {
				ready = append(ready, n)
			}
		}
	}
	return ready
}

// eventually waits for cond; when it never holds, the test fails with what the namespace's
// pods and events say, so that a CI log alone tells why.
func eventually(t *testing.T, ns string, cond func() bool, timeout time.Duration, msg string, args ...any) {
	t.Helper()
	if assert.Eventually(t, cond, timeout, 250*time.Millisecond, fmt.Sprintf(msg, args...)) {
		return
	}
	ctx := context.Background()
	if pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			var states []string
			for _, c := range p.Status.ContainerStatuses {
				switch {
				case c.State.Waiting != nil:
					states = append(states, c.Name+": waiting "+c.State.Waiting.Reason+" "+c.State.Waiting.Message)
				case c.State.Terminated != nil:
					states = append(states, c.Name+": terminated "+c.State.Terminated.Reason)
				default:
					states = append(states, fmt.Sprintf("%s: running, ready %t", c.Name, c.Ready))
				}
			}
			t.Logf("pod %s on %q: %s deleting=%t %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil, states)
		}
	}
	if rss, err := kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, rs := range rss.Items {
			t.Logf("replicaset %s: %d/%d ready %v", rs.Name, rs.Status.ReadyReplicas, rs.Status.Replicas, rs.Status.Conditions)
		}
	}
	if events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range events.Items {
			t.Logf("event %s %s/%s: %s %s (x%d)", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
		}
	}
	for _, n := range readyNodes(t) {
		t.Logf("node %s ready and schedulable", n.Name)
	}
	t.FailNow()
}

// webPod is a busybox that answers HTTP on 8080 with its pod name.
func webPod(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "web", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", `mkdir -p /www && echo "$HOSTNAME" >/www/index.html && exec httpd -f -p 8080 -h /www`},
				Ports:   []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1},
			}},
		},
	}
}

func runningPods(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestNodesPodsAndServices: a DaemonSet runs once per node; its pods reach each other across
// nodes by address, and a Service by name through the cluster DNS; the host reaches the
// Service's ClusterIP.
func TestNodesPodsAndServices(t *testing.T) {
	ctx := context.Background()
	nodes := readyNodes(t)
	require.NotEmpty(t, nodes)
	t.Logf("%d nodes Ready", len(nodes))
	ns := namespace(t, "hangar-smoke")
	labels := map[string]string{"app": "web"}
	start := time.Now()
	_, err := kube.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: webPod(labels)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 8080}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	var pods []corev1.Pod
	require.Eventually(t, func() bool {
		pods = runningPods(t, ns, "app=web")
		return len(pods) == len(nodes)
	}, 90*time.Second, 250*time.Millisecond, "one ready pod per node")
	t.Logf("DaemonSet ready on every node: %s", time.Since(start).Round(time.Millisecond))
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	for _, n := range nodes {
		assert.Equal(t, 1, perNode[n.Name], "pods on %s", n.Name)
	}

	for _, from := range pods {
		for _, to := range pods {
			out := kubectl(t, "-n", ns, "exec", from.Name, "--", "wget", "-qO-", "http://"+to.Status.PodIP+":8080")
			assert.Equal(t, to.Name, strings.TrimSpace(out), "%s (%s) -> %s (%s)", from.Name, from.Spec.NodeName, to.Name, to.Spec.NodeName)
		}
		// The Service by its name, through the cluster DNS, from every node.
		name := "web." + ns + ".svc.cluster.local"
		out := kubectl(t, "-n", ns, "exec", from.Name, "--", "nslookup", name)
		svc, err := kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, out, svc.Spec.ClusterIP, "DNS answer on %s", from.Spec.NodeName)
		out = kubectl(t, "-n", ns, "exec", from.Name, "--", "wget", "-qO-", "http://web:8080")
		assert.Contains(t, out, "web-", "the Service answers on %s", from.Spec.NodeName)
	}

	// The host reaches ClusterIPs (through the first node's kube-proxy).
	svc, err := kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + svc.Spec.ClusterIP + ":8080")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "web-")
}

// TestDrainMovesPods drains a node: the Deployment's pods there go to the other nodes.
func TestDrainMovesPods(t *testing.T) {
	ctx := context.Background()
	nodes := readyNodes(t)
	if len(nodes) < 2 {
		t.Skip("a drain needs a second node to move pods to (HANGAR_NODES=2)")
	}
	ns := namespace(t, "hangar-smoke-drain")
	labels := map[string]string{"app": "mover"}
	replicas := int32(2 * len(nodes))
	_, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "mover"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: webPod(labels)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, ns, func() bool { return len(runningPods(t, ns, "app=mover")) == int(replicas) }, 90*time.Second,
		"%d pods of the Deployment ready", replicas)

	victim := nodes[len(nodes)-1].Name
	t.Cleanup(func() { kubectl(t, "uncordon", victim) })
	start := time.Now()
	kubectl(t, "drain", victim, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s")
	eventually(t, ns, func() bool {
		pods := runningPods(t, ns, "app=mover")
		for _, p := range pods {
			if p.Spec.NodeName == victim {
				return false
			}
		}
		return len(pods) == int(replicas)
	}, 90*time.Second, "every pod running off %s", victim)
	t.Logf("drain of %s: all %d pods running elsewhere after %s", victim, replicas, time.Since(start).Round(time.Millisecond))
}

// TestDynamicVolumes: a claim of the default class (local-path, Filesystem) and one of the
// block class (loop-provisioner, Block) are provisioned on the node their pod lands on, and
// the pod reads back what it wrote.
func TestDynamicVolumes(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "hangar-smoke-volumes")
	block := corev1.PersistentVolumeBlock
	claims := []*corev1.PersistentVolumeClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "fs"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "blk"}, Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("hangar-block"), VolumeMode: &block,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		}},
	}
	for _, c := range claims {
		_, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, c, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	start := time.Now()
	_, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "user"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			RestartPolicy:                 corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "user", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command:       []string{"sh", "-c", `echo fs-ok >/data/f && cat /data/f && echo blk-ok | dd of=/dev/xvdb conv=fsync 2>/dev/null && head -c 6 /dev/xvdb && echo && sleep 3600`},
				VolumeMounts:  []corev1.VolumeMount{{Name: "fs", MountPath: "/data"}},
				VolumeDevices: []corev1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvdb"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "fs", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "fs"}}},
				{Name: "blk", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "blk"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, err := kube.CoreV1().Pods(ns).GetLogs("user", &corev1.PodLogOptions{}).DoRaw(ctx)
		return err == nil && strings.Contains(string(out), "fs-ok") && strings.Contains(string(out), "blk-ok")
	}, 120*time.Second, 500*time.Millisecond, "the pod writes and reads both volumes")
	t.Logf("claims provisioned and used: %s", time.Since(start).Round(time.Millisecond))
	for _, c := range claims {
		got, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, c.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.ClaimBound, got.Status.Phase, c.Name)
	}
}
