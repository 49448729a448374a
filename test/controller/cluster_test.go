//go:build kube

package controller

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/clusterconfig"
	"github.com/hangarvm/hangar/pkg/controller/manager"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	instancetypeclient "github.com/hangarvm/hangar/pkg/generated/instancetype/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// Where artifacts/ put the controller's identity and configuration.
const (
	controllerNamespace      = "hangar"
	controllerServiceAccount = "virt-controller"
	testLauncherImage        = "hangar.local/virt-launcher:test"
)

// cluster is kube-apiserver + virt-api + kube-controller-manager with virt-controller's RBAC
// (artifacts/install/rbac) and configuration (artifacts/components) applied.
type cluster struct {
	*framework.Cluster
	t testing.TB
	// controllerConfig authenticates as the virt-controller ServiceAccount (a token, as in a
	// pod) and reaches kube-apiserver only: both clientsets use it, as in production.
	controllerConfig *rest.Config
	// requests counts the controller's requests by "METHOD path status".
	requests *requestCounter
}

func startCluster(t testing.TB) *cluster {
	t.Helper()
	c := &cluster{Cluster: framework.StartAggregated(t), t: t, requests: &requestCounter{counts: map[string]int{}}}
	ctx := context.Background()
	dir := filepath.Join(framework.RepoRoot(), "artifacts")
	out, err := c.Kubectl("apply", "-f", filepath.Join(dir, "install", "rbac", "virt-controller.yaml"), "-f", filepath.Join(dir, "components", "config.yaml"))
	require.NoError(t, err, out)
	c.setConfig(map[string]string{clusterconfig.KeyUseEmulation: "true", clusterconfig.KeyLauncherImage: testLauncherImage})

	token, err := c.Kube.CoreV1().ServiceAccounts(controllerNamespace).CreateToken(ctx, controllerServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	c.controllerConfig = &rest.Config{
		Host:            c.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.PEM},
		BearerToken:     token.Status.Token,
		QPS:             200, Burst: 400, // cmd/virt-controller's defaults
		UserAgent: "virt-controller",
	}
	c.controllerConfig.Wrap(c.requests.wrap)
	return c
}

// with returns c for a subtest: failures and cleanups go to t.
func (c *cluster) with(t testing.TB) *cluster {
	cp := *c
	cp.t = t
	return &cp
}

// setConfig replaces the data of the controller's configuration ConfigMap.
func (c *cluster) setConfig(data map[string]string) {
	c.t.Helper()
	ctx := context.Background()
	cms := c.Kube.CoreV1().ConfigMaps(controllerNamespace)
	cm, err := cms.Get(ctx, manager.DefaultOptions().ConfigName, metav1.GetOptions{})
	require.NoError(c.t, err)
	cm.Data = data
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

// startController runs the controllers in this process until the returned stop is called (or
// the test ends). stop returns once they no longer act.
func (c *cluster) startController() (stop func()) {
	c.t.Helper()
	kube, err := kubernetes.NewForConfig(c.controllerConfig)
	require.NoError(c.t, err)
	kubevirt, err := versioned.NewForConfig(c.controllerConfig)
	require.NoError(c.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := manager.DefaultOptions()
	o.Resync = 0
	o.Instancetypes, err = instancetypeclient.NewForConfig(c.controllerConfig)
	require.NoError(c.t, err)
	go func() { done <- manager.Run(ctx, kubevirt, kube, o) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(c.t, err)
			case <-time.After(30 * time.Second):
				c.t.Error("controllers did not stop")
			}
		})
	}
	c.t.Cleanup(stop)
	return stop
}

// namespace creates a namespace and waits for its default ServiceAccount: the ServiceAccount
// admission plugin refuses pods in a namespace without one.
func (c *cluster) namespace(name string) string {
	c.t.Helper()
	ctx := context.Background()
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(c.t, err)
	waitFor(c.t, 60*time.Second, "the default ServiceAccount of "+name, func() (bool, error) {
		_, err := c.Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return name
}

// playKubelet confirms the deletion of launcher pods bound to a node, as the node's kubelet
// would once their containers are gone: without it a bound pod stays Terminating forever.
func (c *cluster) playKubelet() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.t.Cleanup(func() { cancel(); <-done })
	selector := labels.Set{v1.AppLabel: v1.LauncherAppLabelValue}.String()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil && p.Spec.NodeName != "" {
						_ = c.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
							GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// bindPod plays the scheduler: a pods/binding to a node (which need not exist).
func (c *cluster) bindPod(pod *corev1.Pod, node string) {
	c.t.Helper()
	err := c.Kube.CoreV1().Pods(pod.Namespace).Bind(context.Background(), &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	require.NoError(c.t, err)
}

// setPhase plays the node agent, which owns the instance's status from Scheduled on.
func (c *cluster) setPhase(ns, name string, phase v1.VirtualMachineInstancePhase) {
	c.t.Helper()
	waitFor(c.t, 30*time.Second, fmt.Sprintf("VMI %s/%s to enter %s", ns, name, phase), func() (bool, error) {
		vmi, err := c.vmi(ns, name)
		if err != nil {
			return false, err
		}
		vmi.Status.Phase = phase
		vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
			v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: metav1.Now()})
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).UpdateStatus(context.Background(), vmi, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

func (c *cluster) vmi(ns, name string) (*v1.VirtualMachineInstance, error) {
	return c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func (c *cluster) vm(ns, name string) *v1.VirtualMachine {
	c.t.Helper()
	vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	return vm
}

func (c *cluster) gone(ns, name string) bool {
	_, err := c.vmi(ns, name)
	return apierrors.IsNotFound(err)
}

// launcherPods returns the namespace's launcher pods by the UID of their instance.
func (c *cluster) launcherPods(ns string) map[string][]corev1.Pod {
	c.t.Helper()
	pods, err := c.Kube.CoreV1().Pods(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: labels.Set{v1.AppLabel: v1.LauncherAppLabelValue}.String()})
	require.NoError(c.t, err)
	out := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		uid := p.Labels[v1.CreatedByLabel]
		out[uid] = append(out[uid], p)
	}
	return out
}

// events returns the reasons of the events about one object, as kube-apiserver stores them.
func (c *cluster) events(ns, kind, name string) []corev1.Event {
	c.t.Helper()
	list, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": kind, "involvedObject.name": name}.String()})
	require.NoError(c.t, err)
	return list.Items
}

// action calls a VM action under /apis/subresources.kubevirt.io/v1, as virtctl does.
func (c *cluster) action(ns, name, action, body string) error {
	req := c.Hangar.Discovery().RESTClient().Put().
		AbsPath("/apis/subresources.kubevirt.io/v1/namespaces", ns, "virtualmachines", name, action)
	if body != "" {
		req = req.SetHeader("Content-Type", "application/json").Body([]byte(body))
	}
	return req.Do(context.Background()).Error()
}

// requestCounter counts requests by method, path and response code.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			r.mu.Lock()
			r.counts[fmt.Sprintf("%s %s %d", req.Method, req.URL.Path, resp.StatusCode)]++
			r.mu.Unlock()
		}
		return resp, err
	})
}

func (r *requestCounter) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[key]
}

// countPrefix sums the counts of the keys that start with prefix.
func (r *requestCounter) countPrefix(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, v := range r.counts {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// byResource sums the counts by method, resource (names left out) and code, most first.
func (r *requestCounter) byResource() []string {
	r.mu.Lock()
	sums := map[string]int{}
	for k, v := range r.counts {
		method, rest, _ := strings.Cut(k, " ")
		path, code, _ := strings.Cut(rest, " ")
		parts := strings.Split(strings.Trim(path, "/"), "/")
		// /api/v1/namespaces/NS/RESOURCE[/NAME[/SUB]] or /apis/GROUP/VERSION/namespaces/...
		var resource []string
		for i := 0; i < len(parts); i++ {
			if parts[i] == "namespaces" && i+2 < len(parts) {
				resource = append(resource, parts[i+2])
				if i+4 < len(parts) {
					resource = append(resource, parts[i+4])
				}
				break
			}
		}
		if resource == nil {
			resource = []string{path}
		}
		sums[fmt.Sprintf("%-6s %-40s %s", method, strings.Join(resource, "/"), code)] += v
	}
	r.mu.Unlock()
	lines := make([]string, 0, len(sums))
	for k, v := range sums {
		lines = append(lines, fmt.Sprintf("%6d %s", v, k))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(lines)))
	return lines
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
