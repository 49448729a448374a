//go:build kube

package integration

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// TestLauncherPodAdmission: behind a real kube-apiserver, with virt-api's own RBAC, an
// instance or a VM start whose launcher pod the namespace's quota, LimitRange or Pod Security
// level would refuse is refused at once, naming the rule, and nothing is stored.
func TestLauncherPodAdmission(t *testing.T) {
	c := framework.StartAggregatedWith(t, func(o *virtapi.Options) {
		o.LauncherPods.PodSecurityExemptNamespaces = []string{"psa-exempt"}
	})
	ctx := context.Background()

	// virt-controller's configuration reaches virt-api too (its Role names that one
	// ConfigMap): a memory overhead of 1Mi makes a 128Mi guest's launcher pod ask for 178Mi
	// (the 1Mi, its page tables, a vCPU, the I/O thread and the graphics device: 49.25Mi,
	// rounded up), where the default 180Mi would make it 357Mi.
	_, err := c.Kube.CoreV1().ConfigMaps("hangar").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hangar-config"},
		Data:       map[string]string{"memoryOverhead": "1Mi", "useEmulation": "true"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	t.Run("a quota on memory requests, with virt-controller's configuration", func(t *testing.T) {
		ns := "quota-memory"
		createNamespace(t, c.Kube, ns)
		createQuota(t, c, ns, "mem", corev1.ResourceList{corev1.ResourceRequestsMemory: resource.MustParse("100Mi")})
		waitRefused(t, c, ns, "requests.memory=178Mi")
		_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("big"), metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Equal(t, `virtualmachineinstances.kubevirt.io "big" is forbidden: launcher pod: exceeded quota: mem, `+
			`requested: requests.memory=178Mi, used: requests.memory=0, limited: requests.memory=100Mi`, err.Error())
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, "big", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing is stored: %v", err)

		small := newVMI("small")
		small.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("64Mi")
		small.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr.To(false)
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, small, metav1.CreateOptions{})
		assert.NoError(t, err, "82Mi fits")
	})

	t.Run("no pods allowed: instance create, VM create, VM start", func(t *testing.T) {
		ns := "quota-pods"
		createNamespace(t, c.Kube, ns)
		createQuota(t, c, ns, "q1", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
		const rule = "launcher pod: exceeded quota: q1, requested: pods=1, used: pods=0, limited: pods=0"
		waitRefused(t, c, ns, "exceeded quota")
		_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("vmi"), metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Equal(t, `virtualmachineinstances.kubevirt.io "vmi" is forbidden: `+rule, err.Error())

		vms := c.Hangar.KubevirtV1().VirtualMachines(ns)
		_, err = vms.Create(ctx, newVM("always", v1.RunStrategyAlways), metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Equal(t, `virtualmachines.kubevirt.io "always" is forbidden: `+rule, err.Error())

		// A VM that does not run costs no pod: created. Its start says why it cannot run.
		_, err = vms.Create(ctx, newVM("halted", v1.RunStrategyHalted), metav1.CreateOptions{})
		require.NoError(t, err)
		want := `virtualmachines.kubevirt.io "halted" is forbidden: ` + rule
		for _, path := range actionPaths {
			result := c.Hangar.Discovery().RESTClient().Put().AbsPath(path.url(ns, "virtualmachines", "halted", "start")).Do(ctx)
			var code int
			result.StatusCode(&code)
			assert.Equal(t, http.StatusForbidden, code, path.name)
			assert.Equal(t, want, result.Error().Error(), path.name)
		}
		_, err = vms.Start(ctx, "halted", &v1.StartOptions{}, metav1.UpdateOptions{})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Equal(t, want, err.Error())
		_, err = vms.Start(ctx, "halted", &v1.StartOptions{Paused: true, DryRun: []string{metav1.DryRunAll}}, metav1.UpdateOptions{})
		assert.Equal(t, want, errString(err), "a paused start and a dry run say the same")
		vm, err := vms.Get(ctx, "halted", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.RunStrategyHalted, *vm.Spec.RunStrategy, "the refused start changed nothing")
		assert.Empty(t, vm.Status.StateChangeRequests)

		// Switching it on by an update is the same start.
		vm.Spec.RunStrategy = ptr.To(v1.RunStrategyAlways)
		_, err = vms.Update(ctx, vm, metav1.UpdateOptions{})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Equal(t, want, err.Error())
	})

	t.Run("a LimitRange below the launcher's memory", func(t *testing.T) {
		ns := "limitrange"
		createNamespace(t, c.Kube, ns)
		_, err := c.Kube.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{
			ObjectMeta: metav1.ObjectMeta{Name: "small"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				Max: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		// The API server stores the LimitRange with default = max: the launcher's container
		// gets a 100Mi limit below its request, which pod validation refuses (422).
		waitRefused(t, c, ns, "LimitRange small")
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("default-limit"), metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.Contains(t, err.Error(), `VirtualMachineInstance.kubevirt.io "default-limit" is invalid: spec.domain.resources: Invalid value: `+
			`launcher pod: container compute: memory request 178Mi is more than its limit 100Mi (the default limit of LimitRange small)`)

		// With a limit of its own above the maximum, LimitRanger's rule answers (403).
		limited := newVMI("over-max")
		limited.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
		_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, limited, metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Equal(t, `virtualmachineinstances.kubevirt.io "over-max" is forbidden: launcher pod: LimitRange small: container compute: `+
			`maximum memory usage per Container is 100Mi, but limit is 662Mi`, err.Error())
	})

	t.Run("Pod Security levels", func(t *testing.T) {
		// Launcher pods meet restricted: every level admits them. Nothing in an instance's spec
		// can make its pod break a level any more, so the refusals are covered by
		// pkg/admission/podpolicy's unit tests with pods that do (a hostPath, root, capabilities).
		assertPodSecurity(t, c, "psa-privileged", "privileged", true, "")
		assertPodSecurity(t, c, "psa-baseline", "baseline", true, "")
		assertPodSecurity(t, c, "psa-restricted", "restricted", true, "")
		// An exemption in kube-apiserver's configuration, told to virt-api by a flag.
		assertPodSecurity(t, c, "psa-exempt", "restricted", true, "")
	})

	// virt-api's new rights are reads, and the ConfigMap one is that ConfigMap only.
	t.Run("virt-api's RBAC: the configuration ConfigMap, quotas and LimitRanges, read-only", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.VirtAPI.Dir, "virt-api.kubeconfig"))
		require.NoError(t, err)
		asVirtAPI, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		_, err = c.Kube.CoreV1().ConfigMaps("hangar").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
		require.NoError(t, err)

		cms := asVirtAPI.CoreV1().ConfigMaps("hangar")
		_, err = cms.Get(ctx, "hangar-config", metav1.GetOptions{})
		assert.NoError(t, err)
		byName := metav1.ListOptions{FieldSelector: "metadata.name=hangar-config"}
		_, err = cms.List(ctx, byName)
		assert.NoError(t, err, "the informer lists by name")
		_, err = cms.Get(ctx, "other", metav1.GetOptions{})
		assert.True(t, apierrors.IsForbidden(err), "another ConfigMap: %v", err)
		_, err = cms.List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "every ConfigMap: %v", err)
		_, err = asVirtAPI.CoreV1().ConfigMaps("quota-pods").List(ctx, byName)
		assert.True(t, apierrors.IsForbidden(err), "ConfigMaps of that name elsewhere: %v", err)
		_, err = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hangar-config"}}, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "writing the configuration: %v", err)

		_, err = asVirtAPI.CoreV1().ResourceQuotas("").List(ctx, metav1.ListOptions{})
		assert.NoError(t, err)
		_, err = asVirtAPI.CoreV1().LimitRanges("").List(ctx, metav1.ListOptions{})
		assert.NoError(t, err)
		err = asVirtAPI.CoreV1().ResourceQuotas("quota-pods").Delete(ctx, "q1", metav1.DeleteOptions{})
		assert.True(t, apierrors.IsForbidden(err), "deleting a quota: %v", err)
		_, err = asVirtAPI.CoreV1().LimitRanges("limitrange").Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "creating a LimitRange: %v", err)
		_, err = asVirtAPI.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "claims are not read (their volumeMode does not matter to the checks): %v", err)
	})

	t.Run("nothing to check in an ordinary namespace", func(t *testing.T) {
		ns := "ordinary"
		createNamespace(t, c.Kube, ns)
		_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("ok"), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("runs", v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)
	})
}

// assertPodSecurity creates a namespace at the given enforce level and checks whether an
// instance is admitted there, or refused (403) with the message part want.
func assertPodSecurity(t *testing.T, c *framework.Cluster, ns, level string, wantAllowed bool, want string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// A namespace not yet in virt-api's cache is read from kube-apiserver: no wait needed.
	_, err = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("guest"), metav1.CreateOptions{})
	if wantAllowed {
		assert.NoError(t, err, "namespace %s (%s)", ns, level)
		return
	}
	require.True(t, apierrors.IsForbidden(err), "namespace %s (%s): %v", ns, level, err)
	assert.Contains(t, err.Error(), `virtualmachineinstances.kubevirt.io "guest" is forbidden: `+want, "namespace %s", ns)
}

func createQuota(t *testing.T, c *framework.Cluster, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	_, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(context.Background(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitRefused waits until a dry-run create of an instance in ns is refused with want in the
// message: virt-api learns of new quotas, LimitRanges and configuration through watches, a
// moment after they are written. A dry run goes through admission and stores nothing.
func waitRefused(t *testing.T, c *framework.Cluster, ns, want string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			_, last = c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("probe"),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return last != nil && strings.Contains(last.Error(), want), nil
		})
	require.NoError(t, err, "waiting for a refusal with %q, last answer: %v", want, last)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
