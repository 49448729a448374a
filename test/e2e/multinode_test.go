//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// nodeNames are the cluster's schedulable, Ready nodes; the tests here need two.
func nodeNames(t *testing.T) []string {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !n.Spec.Unschedulable {
				names = append(names, n.Name)
			}
		}
	}
	require.GreaterOrEqual(t, len(names), 2, "these tests need two nodes: hack/cluster/up.sh --nodes 2 (hack/test.sh runs two)")
	return names
}

// restrictedPod is a busybox pod that meets Pod Security restricted (every e2e namespace
// enforces it), on node, serving HTTP on 8080 with its node's name.
func restrictedPod(name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "web", Image: "hangar.local/busybox:v2", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", `mkdir -p /tmp/www && echo "served-by-` + node + `" >/tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`},
				Ports:   []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

// pinned makes a guest spec run on node.
func pinned(node string) v1.VirtualMachineInstanceSpec {
	spec := guestSpec()
	spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	return spec
}

// TestReplicaSetSpreadsAcrossNodes: a VMIRS of four whose template asks its launcher pods to
// avoid each other (pod anti-affinity, preferred) runs on both nodes; a VM pinned by
// nodeSelector runs on its node.
func TestReplicaSetSpreadsAcrossNodes(t *testing.T) {
	ctx := context.Background()
	nodes := nodeNames(t)
	ns := namespace(t, "e2e-spread")
	labels := map[string]string{"app": "spread"}
	spec := guestSpec()
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
		}}},
	}}
	_, err := hangar.KubevirtV1().VirtualMachineInstanceReplicaSets(ns).Create(ctx, &v1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "spread"},
		Spec: v1.VirtualMachineInstanceReplicaSetSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &v1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: pinned(nodes[1])}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	perNode := map[string]int{}
	require.Eventually(t, func() bool {
		list, err := hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=spread"})
		if err != nil {
			return false
		}
		perNode = map[string]int{}
		running := 0
		for _, v := range list.Items {
			if v.Status.Phase == v1.Running {
				running++
				perNode[v.Status.NodeName]++
			}
		}
		return running == 4
	}, 180*time.Second, time.Second, "four instances running: %v", perNode)
	t.Logf("instances per node: %v", perNode)
	for _, n := range nodes[:2] {
		assert.Positive(t, perNode[n], "instances on %s", n)
	}
	got := waitVMI(t, ns, "pinned", 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	assert.Equal(t, nodes[1], got.Status.NodeName, "the nodeSelector pins the VM")
}

// TestGuestReachesServiceOnOtherNode: a guest on one node resolves a Service's name through
// the cluster DNS and reaches the Service, whose pod runs on the other node.
//
// Both bindings. With the bridge binding the guest broadcasts before anything reaches it
// here: it asks for its gateway's MAC, and the node's CNI bridge hairpins, so the ARP request
// comes back into the pod. Had the pod's bridge learnt the guest's MAC from it on the pod
// interface, it would drop the answer and all the guest's traffic after it. (In
// TestBridgeBinding the node speaks first, so the guest learns the gateway's MAC unasked.)
func TestGuestReachesServiceOnOtherNode(t *testing.T) {
	ctx := context.Background()
	nodes := nodeNames(t)
	ns := namespace(t, "e2e-dns")
	labels := map[string]string{"app": "web"}
	_, err := kube.CoreV1().Pods(ns).Create(ctx, restrictedPod("web", nodes[0], labels), metav1.CreateOptions{})
	require.NoError(t, err)
	// A name of this run's own: the cluster DNS caches a name's address for 30 s, so a rerun
	// within that time would otherwise resolve the previous run's Service.
	service := "web-" + utilrand.String(5)
	_, err = kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: service},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	for _, binding := range []string{"masquerade", "bridge"} {
		t.Run(binding, func(t *testing.T) {
			spec := pinned(nodes[1])
			iface := v1.Interface{Name: "default"}
			if binding == "bridge" {
				iface.Bridge = &v1.InterfaceBridge{}
			} else {
				iface.Masquerade = &v1.InterfaceMasquerade{}
			}
			spec.Domain.Devices.Interfaces = []v1.Interface{iface}
			spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
			_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
				&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: binding}, Spec: spec}, metav1.CreateOptions{})
			require.NoError(t, err)
			got := waitVMI(t, ns, binding, 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
			require.Equal(t, nodes[1], got.Status.NodeName)
			console := attach(t, ns, binding, "console")
			console.waitFor(t, "HANGAR-GUEST-NET", 90*time.Second)
			fqdn := service + "." + ns + ".svc.cluster.local"
			console.typeUntil(t, "nslookup "+fqdn+" >/dev/null && echo resolved-$((1+1))", "resolved-2")
			// The short name too: the guest's search path comes from the pod's by DHCP.
			console.typeUntil(t, "wget -qO- http://"+service+"/ ; echo fetched-$((2+1))", "served-by-"+nodes[0])
		})
	}
}

// TestHandlersServeTheirNodesOnly: with an instance on each node, consoles of both work (virt-api
// reaches each instance's own node), and each node's virt-handler, with its own pod-bound
// credentials, sees the instances of its node and is refused the other node's.
func TestHandlersServeTheirNodesOnly(t *testing.T) {
	ctx := context.Background()
	nodes := nodeNames(t)
	ns := namespace(t, "e2e-handlers")
	for i, n := range nodes[:2] {
		name := fmt.Sprintf("on-%d", i)
		_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
			&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: pinned(n)}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for i, n := range nodes[:2] {
		name := fmt.Sprintf("on-%d", i)
		got := waitVMI(t, ns, name, 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
		require.Equal(t, n, got.Status.NodeName)
		attach(t, ns, name, "console").typeUntil(t, fmt.Sprintf("echo console-%d-$((40+2))", i), fmt.Sprintf("console-%d-42", i))
	}

	handlers, err := kube.CoreV1().Pods("hangar").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=virt-handler"})
	require.NoError(t, err)
	require.Len(t, handlers.Items, len(nodes), "one virt-handler per node")
	for _, h := range handlers.Items {
		// The handler's own credentials: the ServiceAccount token the kubelet projected into its
		// pod, bound to the pod and so to its node.
		out, stderr, err := kubectlStdout(t, "-n", "hangar", "exec", h.Name, "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token")
		require.NoError(t, err, stderr)
		cfg := rest.AnonymousClientConfig(config)
		cfg.BearerToken = strings.TrimSpace(out)
		as := versioned.NewForConfigOrDie(cfg)
		for _, n := range nodes[:2] {
			list, err := as.KubevirtV1().VirtualMachineInstances("").List(ctx, metav1.ListOptions{FieldSelector: "status.nodeName=" + n})
			if n == h.Spec.NodeName {
				require.NoError(t, err, "the handler on %s lists its node's instances", n)
				for _, v := range list.Items {
					assert.Equal(t, n, v.Status.NodeName)
				}
				continue
			}
			require.Error(t, err, "the handler on %s must not see %s's instances", h.Spec.NodeName, n)
			assert.Contains(t, err.Error(), "forbidden")
		}
	}
}

// clusterTool runs hangar-cluster, the local cluster's tool, and returns what it printed.
func clusterTool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(framework.RepoRoot(), "_output", "bin", "hangar-cluster"), args...).Output()
	require.NoError(t, err, "hangar-cluster %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// TestNodeFailureRestartsVMElsewhere stops the kubelet of the node a VM runs on, as a crashed
// node would stop reporting: the node turns NotReady, its instance fails with
// NodeUnresponsive, and the VM (runStrategy Always) runs again on the other node.
func TestNodeFailureRestartsVMElsewhere(t *testing.T) {
	ctx := context.Background()
	nodeNames(t)
	ns := namespace(t, "e2e-failover")
	survivor, failed := controlPlaneSurvives(t)

	// The VM starts on the node that fails: the survivor is cordoned meanwhile.
	_, err := kubectl(t, "cordon", survivor)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = kubectl(t, "uncordon", survivor) })
	_, err = hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "phoenix"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: guestSpec()}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	first := waitVMI(t, ns, "phoenix", 120*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	require.Equal(t, failed, first.Status.NodeName)
	_, err = kubectl(t, "uncordon", survivor)
	require.NoError(t, err)

	start := time.Now()
	clusterTool(t, "stop-kubelet", failed)
	t.Cleanup(func() {
		clusterTool(t, "start-kubelet", failed)
		require.Eventually(t, func() bool {
			n, err := kube.CoreV1().Nodes().Get(context.Background(), failed, metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.Status == corev1.ConditionTrue
				}
			}
			return false
		}, 120*time.Second, time.Second, "node %s Ready again", failed)
	})

	// The old instance fails (a new one of the same name follows at once, so watch events).
	events := func() []string {
		list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var reasons []string
		for _, e := range list.Items {
			if e.InvolvedObject.UID == first.UID {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
	require.Eventually(t, func() bool {
		for _, r := range events() {
			if r == "NodeUnresponsive" {
				return true
			}
		}
		return false
	}, 150*time.Second, time.Second, "the instance on %s fails with NodeUnresponsive", failed)
	t.Logf("kubelet of %s stopped -> instance failed: %s", failed, time.Since(start).Round(time.Second))

	again := waitVMI(t, ns, "phoenix", 180*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return v.UID != first.UID && v.Status.Phase == v1.Running
	})
	assert.NotEqual(t, failed, again.Status.NodeName, "the VM runs again on another node")
	attach(t, ns, "phoenix", "console").typeUntil(t, "echo back-$((3*3))", "back-9")
	t.Logf("kubelet of %s stopped -> VM running on %s: %s", failed, again.Status.NodeName, time.Since(start).Round(time.Second))
}

// controlPlaneSurvives picks the node to lose (failed) and the one that stays (survivor) so that
// Hangar's control plane keeps serving: the survivor holds etcd (one member by default, and a
// StatefulSet's pod on a lost node is never replaced, so Hangar's API would be gone with it)
// and a ready replica of virt-api and of virt-controller. Their anti-affinity is only
// preferred: a rolling update can leave both replicas on one node, so a replica on the node
// to lose is moved while that node is cordoned.
func controlPlaneSurvives(t *testing.T) (survivor, failed string) {
	t.Helper()
	ctx := context.Background()
	etcd := hangarPods(t, "app.kubernetes.io/name=hangar-etcd")
	require.Len(t, etcd, 1, "the test places a one-member etcd")
	survivor = etcd[0].Spec.NodeName
	for _, n := range nodeNames(t) {
		if n != survivor {
			failed = n
		}
	}
	require.NotEmpty(t, failed)
	for _, name := range []string{"virt-api", "virt-controller"} {
		selector := "app.kubernetes.io/name=" + name
		onSurvivor := func() bool {
			for _, p := range hangarPods(t, selector) {
				if p.Spec.NodeName == survivor && p.DeletionTimestamp == nil && podReady(&p) {
					return true
				}
			}
			return false
		}
		if onSurvivor() {
			continue
		}
		_, err := kubectl(t, "cordon", failed)
		require.NoError(t, err)
		for _, p := range hangarPods(t, selector) {
			if p.Spec.NodeName == failed {
				require.NoError(t, kube.CoreV1().Pods("hangar").Delete(ctx, p.Name, metav1.DeleteOptions{}))
				break
			}
		}
		require.Eventually(t, onSurvivor, 180*time.Second, time.Second, "a ready %s on %s", name, survivor)
		_, err = kubectl(t, "uncordon", failed)
		require.NoError(t, err)
		t.Logf("moved a %s replica to %s", name, survivor)
	}
	t.Logf("%s keeps etcd, virt-api and virt-controller; %s fails", survivor, failed)
	return survivor, failed
}
