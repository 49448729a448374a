//go:build e2e && install

// The installer tests treat the local cluster as a foreign one: Hangar comes only from release
// artifacts, whose images the nodes pull from the cluster's registry (hack/test-install.sh
// builds them): HANGAR_RELEASE_DIR is this checkout's release, HANGAR_PREVIOUS_RELEASE_DIR the
// newest earlier one (hack/releases). Each test says what it expects to find installed and
// what it leaves; hack/test-install.sh runs them in that order, the end-to-end suite between
// the upgrade and the removal.

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// release is a release's artifacts.
type release struct {
	dir, version string
}

func releaseFrom(t *testing.T, env string) release {
	t.Helper()
	dir := os.Getenv(env)
	require.NotEmpty(t, dir, "$%s names a release directory (hack/test-install.sh)", env)
	version, err := os.ReadFile(filepath.Join(dir, "version"))
	require.NoError(t, err)
	return release{dir: dir, version: strings.TrimSpace(string(version))}
}

// localHangar is the Hangar object of the local cluster.
func localHangar() string {
	return filepath.Join(framework.RepoRoot(), "hack", "cluster", "hangar.yaml")
}

// install applies a release's manifest and the local cluster's Hangar object, and waits until
// the object is Available at the release's version. It returns how long that took.
func install(t *testing.T, r release) time.Duration {
	t.Helper()
	start := time.Now()
	out, err := kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(r.dir, "hangar.yaml"))
	require.NoError(t, err, out)
	out, err = kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/hangars.hangarvm.io")
	require.NoError(t, err, out)
	out, err = kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", localHangar())
	require.NoError(t, err, out)
	waitInstalled(t, r.version, 15*time.Minute)
	return time.Since(start)
}

// waitInstalled waits until every component runs version and the object is Available.
func waitInstalled(t *testing.T, version string, timeout time.Duration) *operatorv1alpha1.Hangar {
	t.Helper()
	var h *operatorv1alpha1.Hangar
	waitUntil(t, timeout, "Hangar Available at "+version, func() bool {
		var err error
		h, err = installation.HangarvmV1alpha1().Hangars().Get(context.Background(), operatorv1alpha1.Name, metav1.GetOptions{})
		return err == nil && h.Status.ObservedVersion == version && meta.IsStatusConditionTrue(h.Status.Conditions, operatorv1alpha1.ConditionAvailable)
	})
	return h
}

// requireNothingInstalled fails unless the cluster holds no Hangar.
func requireNothingInstalled(t *testing.T) {
	t.Helper()
	_, err := installation.HangarvmV1alpha1().Hangars().Get(context.Background(), operatorv1alpha1.Name, metav1.GetOptions{})
	require.True(t, err != nil, "the cluster must hold no Hangar for this test; it does")
}

// uptimePattern is what sampleUptime makes the guest print: a nonce and /proc/uptime's first field.
var uptimePattern = regexp.MustCompile(`U(\d+)P:([0-9.]+):UP`)

var uptimeNonce atomic.Int64

// guestClock is the guest's uptime and the host's time when the guest printed it.
type guestClock struct {
	host   time.Time
	uptime float64
}

// sampleUptime reads the guest's uptime over its console.
func sampleUptime(t *testing.T, s *stream) guestClock {
	t.Helper()
	n := uptimeNonce.Add(1)
	// The shell computes the nonce, so that the echo of the typed line never matches.
	want := fmt.Sprintf("U%dP:", n)
	s.typeUntil(t, fmt.Sprintf("echo U$((%d+0))P:$(cut -d' ' -f1 /proc/uptime):UP", n), want)
	host := time.Now()
	for _, m := range uptimePattern.FindAllStringSubmatch(s.output(), -1) {
		if m[1] == strconv.FormatInt(n, 10) {
			up, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err)
			return guestClock{host: host, uptime: up}
		}
	}
	t.Fatalf("no uptime in %q", s.output())
	return guestClock{}
}

// paused is how long the guest did not run between two samples: the guest's clock stops
// while its VM is paused (QEMU stops its ticks), the host's does not.
func paused(before, after guestClock) time.Duration {
	return after.host.Sub(before.host) - time.Duration((after.uptime-before.uptime)*float64(time.Second))
}

// apiProber reads and writes VMs through the API while it runs, retrying each failed request
// a few times, as a client of a cluster being upgraded would; it counts the failures it
// retried and those that failed every retry.
type apiProber struct {
	retried, failed atomic.Int64
	ops             atomic.Int64
	mu              sync.Mutex
	lastErrs        []string
	stop            chan struct{}
	done            chan struct{}
}

func startAPIProber(t *testing.T, ns string) *apiProber {
	p := &apiProber{stop: make(chan struct{}), done: make(chan struct{})}
	vms := hangar.KubevirtV1().VirtualMachines(ns)
	ctx := context.Background()
	try := func(op func() error) {
		p.ops.Add(1)
		var err error
		for attempt := 0; attempt < 6; attempt++ {
			if err = op(); err == nil {
				return
			}
			p.retried.Add(1)
			time.Sleep(time.Second)
		}
		p.failed.Add(1)
		p.mu.Lock()
		p.lastErrs = append(p.lastErrs, err.Error())
		p.mu.Unlock()
	}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			name := fmt.Sprintf("probe-%d", i%5)
			try(func() error {
				err := vms.Delete(ctx, name, metav1.DeleteOptions{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			})
			try(func() error {
				_, err := vms.Create(ctx, vm(name), metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			})
			try(func() error { _, err := vms.List(ctx, metav1.ListOptions{}); return err })
		}
	}()
	return p
}

func (p *apiProber) finish() {
	close(p.stop)
	<-p.done
}

// upgradeGuest is a VM of the upgrade test and its console.
type upgradeGuest struct {
	name    string
	console *stream
	before  guestClock
}

// TestInstallerUpgrade installs the previous release, runs guests on both nodes, and upgrades
// to this checkout's release while a client reads and writes VMs: the control plane rolls with
// the API served, handlers roll node by node, migratable guests move to launchers of the new
// version by live migration without a reboot, and a guest that cannot migrate keeps its old
// launcher under the new handler, is reported, and moves once restarted. It leaves this
// checkout's release installed, as hack/install-local.sh would.
func TestInstallerUpgrade(t *testing.T) {
	previous := releaseFrom(t, "HANGAR_PREVIOUS_RELEASE_DIR")
	current := releaseFrom(t, "HANGAR_RELEASE_DIR")
	require.NotEqual(t, previous.version, current.version, "an upgrade needs two versions")
	requireNothingInstalled(t)
	ctx := context.Background()

	took := install(t, previous)
	figure(t, "install-to-available-two-nodes", took.Round(time.Second).Seconds(), "s")

	nodes := nodeNames(t)
	ns := namespace(t, "e2e-upgrade")
	// The movers avoid each other (preferred: each must still find a node to migrate to); the
	// stayer has bridge binding, which cannot migrate.
	mover := guestSpec()
	mover.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"upgrade": "mover"}}}}}}}
	stayer := pinned(nodes[0])
	stayer.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
	stayer.Domain.Devices.Interfaces = []v1.Interface{{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}}}
	guests := map[string]*upgradeGuest{}
	// One at a time: the scheduler weighs the anti-affinity only against pods it has placed.
	for _, g := range []struct {
		name, role string
		spec       v1.VirtualMachineInstanceSpec
	}{{"mover-a", "mover", mover}, {"mover-b", "mover", mover}, {"stayer", "stayer", stayer}} {
		_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Name: g.name},
			Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyAlways), Template: &v1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"upgrade": g.role}}, Spec: g.spec}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		waitVMI(t, ns, g.name, 3*time.Minute, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
		// The banner may have gone by before the console attaches: the shell answers once up.
		guest := &upgradeGuest{name: g.name, console: attach(t, ns, g.name, "console")}
		guest.before = sampleUptime(t, guest.console)
		guests[g.name] = guest
	}
	oldLauncher := launcherImage(t)
	a, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "mover-a", metav1.GetOptions{})
	require.NoError(t, err)
	b, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "mover-b", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEqual(t, a.Status.NodeName, b.Status.NodeName, "a guest on each node")

	prober := startAPIProber(t, ns)
	start := time.Now()
	out, err := kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(current.dir, "hangar.yaml"))
	require.NoError(t, err, out)
	h := waitInstalled(t, current.version, 15*time.Minute)
	newLauncher := launcherImage(t)
	require.NotEqual(t, oldLauncher, newLauncher, "the new version brings its own launcher")
	for _, name := range []string{"mover-a", "mover-b"} {
		waitUntil(t, 10*time.Minute, name+" on a launcher of the new version", func() bool {
			return launcherOf(t, ns, name) == newLauncher
		})
	}
	upgrade := time.Since(start)
	prober.finish()
	figure(t, "upgrade-with-two-vms", upgrade.Round(time.Second).Seconds(), "s")
	figure(t, "api-errors-unretried", prober.failed.Load(), "")
	figure(t, "api-errors-retried", prober.retried.Load(), fmt.Sprintf("(of %d operations)", prober.ops.Load()))
	assert.Zero(t, prober.failed.Load(), "requests that failed every retry: %v", prober.lastErrs)
	t.Logf("upgrade %s -> %s: status %+v", previous.version, current.version, h.Status)

	// No guest rebooted; the longest pause is the movers' migrations.
	var longest time.Duration
	for _, name := range []string{"mover-a", "mover-b", "stayer"} {
		g := guests[name]
		console := attach(t, ns, name, "console")
		after := sampleUptime(t, console)
		pause := paused(g.before, after)
		t.Logf("%s: uptime %.1f s -> %.1f s over %s; paused %s", name, g.before.uptime, after.uptime,
			after.host.Sub(g.before.host).Round(time.Millisecond), pause.Round(time.Millisecond))
		require.Greater(t, after.uptime, g.before.uptime, "%s did not reboot", name)
		assert.Less(t, pause, 30*time.Second, "%s ran through the upgrade", name)
		longest = max(longest, pause)
	}
	figure(t, "guest-longest-pause", math.Max(0, float64(longest.Milliseconds())), "ms")

	// The stayer cannot migrate (bridge binding): it keeps its launcher under the new
	// handler, is counted, and said why.
	assert.Equal(t, oldLauncher, launcherOf(t, ns, "stayer"))
	waitUntil(t, 2*time.Minute, "the stayer counted as outdated", func() bool {
		h, err := installation.HangarvmV1alpha1().Hangars().Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		return err == nil && h.Status.OutdatedVirtualMachineInstanceWorkloads != nil && *h.Status.OutdatedVirtualMachineInstanceWorkloads == 1
	})
	vmi, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "stayer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, vmi.Labels, v1.OutdatedLauncherImageLabel)
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=stayer,reason=OutdatedLauncherCannotMigrate"})
	require.NoError(t, err)
	assert.NotEmpty(t, events.Items, "the stayer was told why it stays")
	console := attach(t, ns, "stayer", "console")
	console.typeUntil(t, "echo old-launcher-$((40+2))", "old-launcher-42")

	// Restarted, it runs a launcher of the new version, and nothing is outdated any more.
	out, err = virtctl(t, "restart", "stayer", "-n", ns)
	require.NoError(t, err, out)
	waitUntil(t, 3*time.Minute, "the stayer on a launcher of the new version", func() bool {
		v, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "stayer", metav1.GetOptions{})
		return err == nil && v.UID != vmi.UID && v.Status.Phase == v1.Running && launcherOf(t, ns, "stayer") == newLauncher
	})
	waitUntil(t, 2*time.Minute, "no outdated instance", func() bool {
		h, err := installation.HangarvmV1alpha1().Hangars().Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		return err == nil && h.Status.OutdatedVirtualMachineInstanceWorkloads != nil && *h.Status.OutdatedVirtualMachineInstanceWorkloads == 0
	})
	for _, name := range []string{"mover-a", "mover-b", "stayer"} {
		require.NoError(t, hangar.KubevirtV1().VirtualMachines(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	}
}

// launcherOf is the compute image of an instance's one running launcher pod, or "".
func launcherOf(t *testing.T, ns, name string) string {
	t.Helper()
	vmi, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || len(vmi.Status.ActivePods) != 1 {
		return ""
	}
	for _, pod := range launcherPods(t, ns, vmi.UID) {
		if _, active := vmi.Status.ActivePods[pod.UID]; active && pod.Status.Phase == corev1.PodRunning {
			return pod.Spec.Containers[0].Image
		}
	}
	return ""
}

// TestInstallerPreflightRefusesKubeVirt: with KubeVirt's CustomResourceDefinitions in the
// cluster, the operator deploys nothing and says why; the cluster is left as it was.
func TestInstallerPreflightRefusesKubeVirt(t *testing.T) {
	current := releaseFrom(t, "HANGAR_RELEASE_DIR")
	requireNothingInstalled(t)
	ctx := context.Background()
	crd := filepath.Join(t.TempDir(), "kubevirt-crd.yaml")
	require.NoError(t, os.WriteFile(crd, []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: virtualmachines.kubevirt.io
spec:
  group: kubevirt.io
  scope: Namespaced
  names: {plural: virtualmachines, singular: virtualmachine, kind: VirtualMachine}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`), 0o644))
	out, err := kubectl(t, "apply", "-f", crd)
	require.NoError(t, err, out)
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "--ignore-not-found", "-f", crd) })

	out, err = kubectl(t, "apply", "--server-side", "-f", filepath.Join(current.dir, "hangar.yaml"))
	require.NoError(t, err, out)
	out, err = kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/hangars.hangarvm.io")
	require.NoError(t, err, out)
	out, err = kubectl(t, "apply", "-f", localHangar())
	require.NoError(t, err, out)
	var h *operatorv1alpha1.Hangar
	waitUntil(t, 3*time.Minute, "the operator refuses KubeVirt's CRDs", func() bool {
		h, err = installation.HangarvmV1alpha1().Hangars().Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "KubeVirtInstalled"
	})
	c := meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionDegraded)
	assert.Contains(t, c.Message, "virtualmachines.kubevirt.io")
	assert.False(t, meta.IsStatusConditionTrue(h.Status.Conditions, operatorv1alpha1.ConditionAvailable))
	out, err = kubectl(t, "get", "apiservices", "-l", "app.kubernetes.io/managed-by=hangar-operator", "-o", "name")
	require.NoError(t, err, out)
	assert.Empty(t, strings.TrimSpace(out), "nothing was registered")

	// KubeVirt's CRD goes first: its own (local) APIService would stay while it exists.
	out, err = kubectl(t, "delete", "-f", crd)
	require.NoError(t, err, out)
	uninstall(t, current)
}

// uninstall deletes the Hangar object, waits until it is gone, deletes the release manifest
// and checks that nothing of Hangar is left.
func uninstall(t *testing.T, r release) {
	t.Helper()
	out, err := kubectl(t, "delete", "hangar", operatorv1alpha1.Name, "--timeout=10m")
	require.NoError(t, err, out)
	// --ignore-not-found: the metrics reader's token Secret goes with its ServiceAccount.
	out, err = kubectl(t, "delete", "-f", filepath.Join(r.dir, "hangar.yaml"), "--ignore-not-found", "--timeout=5m")
	require.NoError(t, err, out)
	requireRemoved(t, r)
}

// requireRemoved checks that the cluster holds nothing of Hangar: none of the release
// manifest's cluster-wide objects (ClusterRoles and their bindings, the
// CustomResourceDefinition, the namespace), none of the APIServices and webhook the operator
// made, and no namespace left terminating.
func requireRemoved(t *testing.T, r release) {
	t.Helper()
	ctx := context.Background()
	waitUntil(t, 3*time.Minute, "every namespace deleted", func() bool {
		list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, n := range list.Items {
			if n.Status.Phase == corev1.NamespaceTerminating || n.Name == "hangar" {
				return false
			}
		}
		return true
	})
	objects := []string{"apiservice/v1.kubevirt.io", "apiservice/v1alpha3.kubevirt.io", "apiservice/v1.subresources.kubevirt.io",
		"apiservice/v1beta1.instancetype.kubevirt.io", "apiservice/v1beta1.snapshot.kubevirt.io", "apiservice/v1beta1.clone.kubevirt.io", "apiservice/v1beta1.export.kubevirt.io", "validatingwebhookconfiguration/virt-api-validator"}
	manifest, err := os.ReadFile(filepath.Join(r.dir, "hangar.yaml"))
	require.NoError(t, err)
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		kind := regexp.MustCompile(`(?m)^kind: (\w+)$`).FindStringSubmatch(doc)
		name := regexp.MustCompile(`(?m)^  name: (\S+)$`).FindStringSubmatch(doc)
		if kind == nil || name == nil || regexp.MustCompile(`(?m)^  namespace: `).MatchString(doc) {
			continue // namespaced objects go with the namespace
		}
		objects = append(objects, strings.ToLower(kind[1])+"/"+name[1])
	}
	require.Greater(t, len(objects), 10, "the manifest's cluster-wide objects")
	for _, o := range objects {
		out, err := kubectl(t, "get", o, "--ignore-not-found", "-o", "name")
		require.NoError(t, err, out)
		assert.Empty(t, strings.TrimSpace(out), "%s is left", o)
	}
}

// TestInstallerRemoval: deleting the Hangar object waits while a VM exists (the default
// uninstallStrategy) and says so; once the VM is gone, Hangar is removed, and deleting the
// release manifest leaves nothing of it in the cluster.
func TestInstallerRemoval(t *testing.T) {
	current := releaseFrom(t, "HANGAR_RELEASE_DIR")
	ctx := context.Background()
	waitInstalled(t, current.version, time.Minute)
	ns := namespace(t, "e2e-removal")
	// Right after another test rolled virt-api (a rotation), the aggregator may answer 503 for
	// a moment, as a client retrying would see.
	var err error
	waitUntil(t, time.Minute, "a VM created", func() bool {
		_, err = hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, vm("kept"), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	})

	require.NoError(t, installation.HangarvmV1alpha1().Hangars().Delete(ctx, operatorv1alpha1.Name, metav1.DeleteOptions{}))
	waitUntil(t, time.Minute, "the removal waits for the VM", func() bool {
		h, err := installation.HangarvmV1alpha1().Hangars().Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionDegraded)
		return h.Status.Phase == operatorv1alpha1.PhaseDeleting && c != nil && c.Reason == "WorkloadsExist" && strings.Contains(c.Message, ns+"/kept")
	})
	out, _ := kubectl(t, "get", "apiservices", "-o", "name")
	assert.Contains(t, out, "v1.kubevirt.io", "nothing is removed while the VM exists")

	require.NoError(t, hangar.KubevirtV1().VirtualMachines(ns).Delete(ctx, "kept", metav1.DeleteOptions{}))
	waitUntil(t, 5*time.Minute, "Hangar removed", func() bool {
		_, err := installation.HangarvmV1alpha1().Hangars().Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	out, err = kubectl(t, "delete", "-f", filepath.Join(current.dir, "hangar.yaml"), "--ignore-not-found", "--timeout=5m")
	require.NoError(t, err, out)
	requireRemoved(t, current)
}

// TestInstallerHelm installs this checkout's release with its Helm chart (helm built from the
// Go module proxy), boots a guest, and uninstalls: the chart's pre-delete hook removes Hangar
// before Helm deletes the operator, and nothing is left.
func TestInstallerHelm(t *testing.T) {
	current := releaseFrom(t, "HANGAR_RELEASE_DIR")
	requireNothingInstalled(t)
	helm, err := framework.BinaryPath("helm")
	require.NoError(t, err)
	ctx := context.Background()

	// The local cluster's settings as the chart's values.
	local, err := os.ReadFile(localHangar())
	require.NoError(t, err)
	spec := local[strings.Index(string(local), "\nspec:\n")+len("\nspec:\n"):]
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, append([]byte("hangar:\n"), spec...), 0o644))
	run := func(args ...string) {
		t.Helper()
		out, err := execCommand(helm, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		require.NoError(t, err, out)
	}
	start := time.Now()
	run("install", "hangar", filepath.Join(current.dir, "chart", "hangar"), "--namespace", "hangar", "--create-namespace",
		"--values", values, "--wait", "--timeout", "10m")
	waitInstalled(t, current.version, 15*time.Minute)
	figure(t, "helm-install-to-available-two-nodes", time.Since(start).Round(time.Second).Seconds(), "s")

	ns := namespace(t, "e2e-helm")
	_, err = hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "helmed"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	console := attach(t, ns, "helmed", "console")
	console.waitFor(t, banner, 3*time.Minute)
	require.NoError(t, hangar.KubevirtV1().VirtualMachineInstances(ns).Delete(ctx, "helmed", metav1.DeleteOptions{}))
	waitUntil(t, 2*time.Minute, "the guest gone", func() bool {
		_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "helmed", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	require.NoError(t, kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))

	run("uninstall", "hangar", "--namespace", "hangar", "--wait", "--timeout", "10m")
	require.NoError(t, kube.CoreV1().Namespaces().Delete(ctx, "hangar", metav1.DeleteOptions{}), "Helm leaves the namespace it created")
	requireRemoved(t, current)
}

// TestInstallerCertificateRotation shortens the certificates' lifetimes and watches the
// operator renew them, CAs included, while a client reads and writes VMs: virt-api serves the
// new certificate without a restart, and no request fails beyond a retry. It restores the
// lifetimes.
func TestInstallerCertificateRotation(t *testing.T) {
	current := releaseFrom(t, "HANGAR_RELEASE_DIR")
	waitInstalled(t, current.version, time.Minute)
	ctx := context.Background()
	ns := namespace(t, "e2e-rotation")
	servedBefore := servedSerial(t)
	caBefore := secretSerial(t, "hangar-ca")

	hangars := installation.HangarvmV1alpha1().Hangars()
	h, err := hangars.Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
	require.NoError(t, err)
	original := h.Spec.CertificateRotateStrategy
	h.Spec.CertificateRotateStrategy = operatorv1alpha1.CertificateRotateStrategy{SelfSigned: &operatorv1alpha1.SelfSignConfiguration{
		CA:     &operatorv1alpha1.CertConfig{Duration: &metav1.Duration{Duration: 20 * time.Minute}, RenewBefore: &metav1.Duration{Duration: 8 * time.Minute}},
		Server: &operatorv1alpha1.CertConfig{Duration: &metav1.Duration{Duration: 4 * time.Minute}, RenewBefore: &metav1.Duration{Duration: 2 * time.Minute}},
	}}
	prober := startAPIProber(t, ns)
	_, err = hangars.Update(ctx, h, metav1.UpdateOptions{})
	require.NoError(t, err)

	// The CA is renewed at once (it outlives the new strategy); certificates follow once its
	// bundle has spread, and again two minutes later.
	waitUntil(t, 2*time.Minute, "a new CA", func() bool { return secretSerial(t, "hangar-ca") != caBefore })
	served := map[string]bool{servedBefore: true}
	waitUntil(t, 10*time.Minute, "virt-api serving two renewed certificates", func() bool {
		served[servedSerial(t)] = true
		return len(served) >= 3
	})
	prober.finish()
	figure(t, "rotation-api-errors-unretried", prober.failed.Load(), "")
	figure(t, "rotation-api-errors-retried", prober.retried.Load(), fmt.Sprintf("(of %d operations)", prober.ops.Load()))
	assert.Zero(t, prober.failed.Load(), "requests that failed every retry: %v", prober.lastErrs)

	h, err = hangars.Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
	require.NoError(t, err)
	h.Spec.CertificateRotateStrategy = original
	_, err = hangars.Update(ctx, h, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// secretSerial is the serial of the certificate in a Secret of Hangar's namespace.
func secretSerial(t *testing.T, name string) string {
	t.Helper()
	s, err := kube.CoreV1().Secrets("hangar").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return serialOf(t, s.Data["tls.crt"])
}

// servedSerial is the serial of the certificate a virt-api pod presents now (the host
// reaches pod addresses).
func servedSerial(t *testing.T) string {
	t.Helper()
	pods, err := kube.CoreV1().Pods("hangar").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=virt-api"})
	require.NoError(t, err)
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		if serial, err := presentedSerial(p.Status.PodIP + ":8443"); err == nil {
			return serial
		}
	}
	return ""
}

// presentedSerial is the serial of the certificate a TLS server at address presents.
func presentedSerial(address string) (string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", address,
		&tls.Config{InsecureSkipVerify: true}) // only the certificate is looked at, not trusted
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// serialOf is the serial of a PEM certificate.
func serialOf(t *testing.T, data []byte) string {
	t.Helper()
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert.SerialNumber.String()
}

// execCommand runs a program and returns its combined output.
func execCommand(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
