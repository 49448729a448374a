package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Lock takes the cluster directory's lock: one up or down at a time. It is released when the
// process exits (the daemons inherit no descriptor).
func (s *Settings) Lock() error {
	if err := os.MkdirAll(s.ClusterDir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(s.ClusterDir+"/.lock", os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("another hangar-cluster up or down works on %s", s.ClusterDir)
	}
	return nil // f stays open until exit
}

// Up brings the cluster up; on a running, healthy one it only checks.
func (s *Settings) Up() error {
	start := time.Now()
	if err := s.Lock(); err != nil {
		return err
	}
	if err := s.refuseFewerNodes(); err != nil {
		return err
	}
	if s.allRunning() && s.nodesReady(nil) == nil {
		Logf("[up] cluster already running, %d nodes Ready (%.1fs)", s.Nodes, time.Since(start).Seconds())
		s.printUsage()
		return nil
	}
	for _, dir := range []string{s.LogDir(), s.PidDir(), s.ConfigDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	steps := []struct {
		name string
		f    func() error
	}{
		{"host network free", s.CheckNetworkFree},
		{"host state recorded", s.RecordHostState},
		{"kernel features", ensureKernelFeatures},
		{"pki and kubeconfigs", s.MakePKI},
		{fmt.Sprintf("bridge %s %s", s.Bridge, s.HostIP), s.EnsureBridge},
	}
	for _, st := range steps {
		if err := Step("up", st.name, st.f); err != nil {
			return err
		}
	}
	for _, n := range s.AllNodes() {
		if err := Step("up", fmt.Sprintf("node %s: %s, pods %s", n.Name, n.IP, n.PodCIDR), func() error {
			for _, f := range []func(*Node) error{s.EnsureNodeNetwork, s.EnsureMountNamespace, s.EnsureCgroupRoot, s.WriteNodeConfigs} {
				if err := f(n); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if err := Step("up", "route to Services", s.EnsureServiceRoute); err != nil {
		return err
	}
	if err := Step("up", "registry "+s.RegistryAddress(), s.StartRegistry); err != nil {
		return err
	}
	for _, d := range s.ControlPlane() {
		d := d
		if err := Step("up", d.Name, func() error { return s.StartAndWait(d, 120*time.Second) }); err != nil {
			return err
		}
	}
	for _, n := range s.AllNodes() {
		d := s.NodeDaemons(n)[0]
		if err := Step("up", d.Name, func() error { return s.StartAndWait(d, 30*time.Second) }); err != nil {
			return err
		}
	}
	if err := Step("up", "images "+s.PauseImage+" "+s.BusyboxImage, s.BaseImages); err != nil {
		return err
	}
	// A kubelet started now must report afresh: its Node says Ready from an earlier run. One
	// that kept running reports only changes, or once a minute (nodeStatusReportFrequency):
	// its Ready stands (an up that restarts, say, the registry need not wait a minute).
	since := map[string]time.Time{}
	now := time.Now().Add(-time.Second).UTC().Truncate(time.Second)
	for _, n := range s.AllNodes() {
		d := s.NodeDaemons(n)[1]
		if s.Pid(d.Name, d.Binary) == 0 {
			since[n.Name] = now
		}
		if err := Step("up", d.Name, func() error { return s.StartAndWait(d, 60*time.Second) }); err != nil {
			return err
		}
	}
	if err := Step("up", fmt.Sprintf("%d nodes Ready", s.Nodes), func() error {
		return WaitFor(120*time.Second, "nodes Ready", func() error { return s.nodesReady(since) })
	}); err != nil {
		return err
	}
	if err := Step("up", "nodes beyond "+fmt.Sprint(s.Nodes)+" forgotten", s.forgetExtraNodes); err != nil {
		return err
	}
	for _, n := range s.AllNodes() {
		d := s.NodeDaemons(n)[2]
		if err := Step("up", d.Name, func() error { return s.StartAndWait(d, 60*time.Second) }); err != nil {
			return err
		}
	}
	if err := s.Addons(); err != nil {
		return err
	}
	Logf("[up] cluster up, %d nodes (%.1fs)", s.Nodes, time.Since(start).Seconds())
	s.printUsage()
	return nil
}

// refuseFewerNodes: a cluster that runs more nodes than asked for must go down first (its
// extra nodes' pods would be left without a node).
func (s *Settings) refuseFewerNodes() error {
	for _, n := range s.existingNodes() {
		if n.Index > s.Nodes && s.Pid("kubelet@"+n.Name, s.Bin("kubelet")) != 0 {
			return fmt.Errorf("the cluster runs node %s, beyond HANGAR_NODES=%d: run hack/cluster/down.sh first", n.Name, s.Nodes)
		}
	}
	return nil
}

// forgetExtraNodes deletes the Node objects of this cluster's nodes beyond HANGAR_NODES that
// a previous, larger run registered. No kubelet reports for them any more (refuseFewerNodes),
// so they would stay NotReady with DaemonSet pods that never roll out. Their pods go too, at
// once: nothing runs them (down stopped their node), and the pod garbage collector would wait
// 40 s before replacing them. Their state in _cluster/nodes stays for a later larger run.
func (s *Settings) forgetExtraNodes() error {
	client, err := s.Client()
	if err != nil {
		return err
	}
	nodes, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, node := range nodes.Items {
		if i, ok := s.nodeIndex(node.Name); !ok || i <= s.Nodes {
			continue
		}
		err := client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		pods, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range pods.Items {
			err := client.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, *metav1.NewDeleteOptions(0))
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Settings) allRunning() bool {
	daemons := append(s.ControlPlane(), s.registryDaemon())
	for _, n := range s.AllNodes() {
		daemons = append(daemons, s.NodeDaemons(n)...)
		if s.Snapshots {
			// A running cluster gets the snapshot add-on from an up that asks for it.
			daemons = append(daemons, s.csiDriverDaemon(n))
		}
	}
	for _, d := range daemons {
		if s.Pid(d.Name, d.Binary) == 0 {
			return false
		}
	}
	return true
}

// Client is a clientset of the cluster admin.
func (s *Settings) Client() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.AdminKubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// nodesReady: every node Ready, on a heartbeat at or after since[node] where given (the
// stored object of a restarted cluster says Ready from before; only a fresh heartbeat means a
// restarted kubelet works).
func (s *Settings) nodesReady(since map[string]time.Time) error {
	client, err := s.Client()
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range s.AllNodes() {
		node, err := client.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(since[n.Name]) {
				ready = true
			}
		}
		if !ready {
			errs = append(errs, fmt.Errorf("%s not Ready", n.Name))
		}
	}
	return errors.Join(errs...)
}

func ensureKernelFeatures() error {
	if b, _ := os.ReadFile("/proc/filesystems"); !containsWord(string(b), "overlay") {
		if err := run("modprobe", "overlay"); err != nil {
			return err
		}
	}
	if !exists("/proc/sys/net/bridge") {
		// Pod -> Service -> pod on one bridge needs bridged traffic to pass iptables.
		return run("modprobe", "br_netfilter")
	}
	return nil
}

func containsWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

func (s *Settings) printUsage() {
	fmt.Fprintf(os.Stderr, `
Cluster is up: Kubernetes %s, %d nodes (%s .. %s), API %s
  export KUBECONFIG=%s
  export PATH=%s:$PATH
  kubectl get nodes -o wide
Images:   hack/cluster/image.sh IMAGE -file SRC:/DEST -entrypoint /DEST   (pods use imagePullPolicy: Never)
Registry: %s (CA %s); hack/cluster/push.sh NAME:TAG -file SRC:/DEST ... prints %s/NAME@DIGEST
Logs:     %s/ and %s/<node>/logs/
Stop:     hack/cluster/down.sh
`, KubeVersion, s.Nodes, s.Node(1).Name, s.Node(s.Nodes).Name, s.APIServerURL(), s.AdminKubeconfig(), s.BinDir,
		s.RegistryAddress(), s.RegistryCA(), s.RegistryAddress(), s.LogDir(), s.NodesDir())
}

// nodeByName is the node of that name.
func (s *Settings) nodeByName(name string) (*Node, error) {
	for _, n := range s.existingNodes() {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node %q", name)
}

// StopKubelet stops a node's kubelet, as a crashed or partitioned node's would stop
// reporting: its pods, and the guests in them, go on running.
func (s *Settings) StopKubelet(name string) error {
	n, err := s.nodeByName(name)
	if err != nil {
		return err
	}
	d := s.NodeDaemons(n)[1]
	if ran, err := s.Stop(d.Name, d.Binary, 10*time.Second); err != nil || !ran {
		return errors.Join(err, fmt.Errorf("%s was not running", d.Name))
	}
	return nil
}

// StartKubelet starts a node's kubelet again and waits until it serves.
func (s *Settings) StartKubelet(name string) error {
	n, err := s.nodeByName(name)
	if err != nil {
		return err
	}
	return s.StartAndWait(s.NodeDaemons(n)[1], 60*time.Second)
}
