//go:build kube

package controller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestLeaderElection runs the virt-controller binary as a Deployment would, several replicas
// with --leader-elect: one leads, the others only wait. A leader killed mid-work (SIGKILL: no
// release) is replaced once its Lease expires, and the new leader finishes the work without
// duplicating any of it; a leader stopped cleanly (SIGTERM) releases the Lease and is replaced
// at once. /metrics shows who leads, the instance phase transitions and the work queues.
func TestLeaderElection(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	binary := buildController(t)
	kubeconfig := filepath.Join(t.TempDir(), "virt-controller.kubeconfig")
	require.NoError(t, framework.WriteKubeconfig(c.controllerConfig, kubeconfig))
	run := func(name string) *controllerProcess { return startControllerProcess(t, binary, kubeconfig, name) }
	ns := c.namespace("failover")

	a, b := run("a"), run("b")
	leader := waitForLeader(t, a, b)
	follower := map[*controllerProcess]*controllerProcess{a: b, b: a}[leader]
	t.Logf("%s leads", leader.name)
	assert.NotContains(t, follower.metrics(t), `workqueue_adds_total{name="virt-controller-vmi"}`, "a follower runs no controller")

	// Every pod the controllers create or delete in the namespace, from now on.
	w, err := c.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: labels.Set{v1.AppLabel: v1.LauncherAppLabelValue}.String()})
	require.NoError(t, err)
	defer w.Stop()
	added, deleted := map[string]bool{}, 0
	seen := make(chan struct{})
	go func() {
		defer close(seen)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added:
				added[ev.Object.(metav1.Object).GetName()] = true
			case watch.Deleted:
				deleted++
			}
		}
	}()

	const n = 50
	for i := range n {
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM(fmt.Sprintf("vm-%02d", i), v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	waitFor(t, wait, "the leader to start some instances", func() (bool, error) {
		l, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) >= 10, err
	})
	leader.kill()
	killed := time.Now()
	l, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	t.Logf("killed %s with %d of %d instances started", leader.name, len(l.Items), n)
	spare := run("c") // the Deployment's replacement

	// Whichever candidate acquires the expired Lease first leads: usually the follower, but
	// the replacement may win the race. The other one is then the spare.
	waitFor(t, wait, "a candidate to take over", func() (bool, error) {
		if spare.leads(t) {
			follower, spare = spare, follower
		}
		return follower.leads(t), nil
	})
	t.Logf("%s took over %.1fs after the leader was killed (lease duration 4s)", follower.name, time.Since(killed).Seconds())
	waitFor(t, wait, "every VM with one Scheduling instance and one pod", func() (bool, error) {
		l, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != n {
			return false, err
		}
		pods := c.launcherPods(ns)
		for _, vmi := range l.Items {
			if vmi.Status.Phase != v1.Scheduling || len(pods[string(vmi.UID)]) != 1 {
				return false, nil
			}
		}
		return len(pods) == n, nil
	})
	lease, err := c.Kube.CoordinationV1().Leases(controllerNamespace).Get(ctx, "virt-controller", metav1.GetOptions{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, *lease.Spec.LeaseTransitions, int32(1))
	assert.False(t, spare.leads(t), "one leader at a time")

	// A clean stop releases the Lease: the spare takes over within a retry period or two.
	leader = follower
	leader.terminate(t)
	stopped := time.Now()
	waitFor(t, 10*time.Second, "the spare to take over", func() (bool, error) { return spare.leads(t), nil })
	t.Logf("%s took over %.1fs after %s stopped (retry period 0.5s)", spare.name, time.Since(stopped).Seconds(), leader.name)
	_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("after", v1.RunStrategyAlways), metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, wait, "the new leader to start the new VM", func() (bool, error) {
		vmi, err := c.vmi(ns, "after")
		return err == nil && vmi.Status.Phase == v1.Scheduling && len(c.launcherPods(ns)[string(vmi.UID)]) == 1, nil
	})

	w.Stop()
	<-seen
	assert.Len(t, added, n+1, "each pod created once, across two failovers")
	assert.Zero(t, deleted, "no pod deleted")

	t.Run("metrics", func(t *testing.T) {
		m := spare.metrics(t)
		for _, want := range []string{
			`leader_election_master_status{name="virt-controller"} 1`,
			`kubevirt_vmi_phase_transition_time_from_creation_seconds_bucket{phase="Scheduling",le="`,
			`kubevirt_vmi_phase_transition_time_from_creation_seconds_count{phase="Scheduling"} `,
			`hangar_virt_controller_launcher_pods_created_total{result="success"} `,
			`workqueue_adds_total{name="virt-controller-vm"} `,
			`workqueue_adds_total{name="virt-controller-vmi"} `,
			`workqueue_adds_total{name="virt-controller-replicaset"} `,
			`workqueue_depth{name="virt-controller-vmi"} `,
			`workqueue_queue_duration_seconds_bucket{name="virt-controller-vmi",le="`,
			`workqueue_work_duration_seconds_bucket{name="virt-controller-vm",le="`,
			`rest_client_requests_total{code="201",host=`,
		} {
			assert.Contains(t, m, want)
		}
		for _, line := range strings.Split(m, "\n") {
			if strings.HasPrefix(line, "kubevirt_vmi_phase_transition_time_from_creation_seconds_count") ||
				strings.HasPrefix(line, `workqueue_adds_total{name="virt-controller-`) {
				t.Log(line)
			}
		}
		resp, err := http.Get(spare.healthzURL + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

// buildController builds cmd/virt-controller.
func buildController(t testing.TB) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "virt-controller")
	out, err := exec.Command("go", "build", "-C", framework.RepoRoot(), "-o", binary, "./cmd/virt-controller").CombinedOutput()
	require.NoError(t, err, "build virt-controller: %s", out)
	return binary
}

// controllerProcess is one virt-controller replica.
type controllerProcess struct {
	name, url, healthzURL, log string
	cmd                        *exec.Cmd
	done                       chan struct{}
	exit                       error
}

func startControllerProcess(t *testing.T, binary, kubeconfig, name string) *controllerProcess {
	t.Helper()
	freeAddr := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().String()
	}
	addr, healthzAddr := freeAddr(), freeAddr()
	p := &controllerProcess{name: name, url: "http://" + addr, healthzURL: "http://" + healthzAddr, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(p.log)
	require.NoError(t, err)
	p.cmd = exec.Command(binary,
		"--kubeconfig="+kubeconfig,
		"--leader-elect=true",
		"--config-namespace="+controllerNamespace,
		// Metrics over plain HTTP on loopback (the flag allows nothing else), /healthz apart.
		"--metrics-bind-address="+addr, "--metrics-insecure-loopback", "--healthz-bind-address="+healthzAddr,
		// Short timings keep the test short; the defaults are 15s, 10s and 2s.
		"--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
		// Slow enough that a failover happens mid-work.
		"--kube-api-qps=25", "--kube-api-burst=25",
		"--v=2")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() { p.exit = p.cmd.Wait(); logFile.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			body, _ := os.ReadFile(p.log)
			if len(body) > 8000 {
				body = body[len(body)-8000:]
			}
			t.Logf("log of %s (tail):\n%s", p.name, body)
		}
	})
	return p
}

func (p *controllerProcess) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// terminate stops the replica as kubelet would, and checks it exits cleanly.
func (p *controllerProcess) terminate(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		assert.NoError(t, p.exit, "%s exits cleanly on SIGTERM", p.name)
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not stop within 30s of SIGTERM", p.name)
	}
}

// metrics scrapes /metrics ("" while the replica is not serving).
func (p *controllerProcess) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = io.Copy(&b, resp.Body)
	return b.String()
}

var masterStatus = regexp.MustCompile(`(?m)^leader_election_master_status\{name="virt-controller"\} 1$`)

func (p *controllerProcess) leads(t *testing.T) bool {
	return masterStatus.MatchString(p.metrics(t))
}

// waitForLeader waits until exactly one of the replicas leads, and stays so for a moment.
func waitForLeader(t *testing.T, replicas ...*controllerProcess) *controllerProcess {
	t.Helper()
	var leader *controllerProcess
	waitFor(t, wait, "one leader", func() (bool, error) {
		var leaders []*controllerProcess
		for _, r := range replicas {
			if r.leads(t) {
				leaders = append(leaders, r)
			}
		}
		if len(leaders) > 1 {
			return false, fmt.Errorf("%d replicas lead at once", len(leaders))
		}
		if len(leaders) == 1 {
			leader = leaders[0]
		}
		return len(leaders) == 1, nil
	})
	// Followers keep following.
	for range 10 {
		time.Sleep(200 * time.Millisecond)
		for _, r := range replicas {
			require.Equal(t, r == leader, r.leads(t), "%s", r.name)
		}
	}
	return leader
}
