//go:build kube

package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// These tests need a real kube-apiserver (hack/cluster/build.sh builds it): run them with
// `go test -tags kube ./test/integration/`.

func createNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func bindRole(t *testing.T, kube kubernetes.Interface, ns, user, clusterRole string) {
	t.Helper()
	_, err := kube.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + clusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForBinding(t, kube, ns, user, clusterRole)
}

// waitForBinding waits until kube-apiserver's authorizer grants user one rule of
// clusterRole in ns: RBAC reads bindings from an informer, so a request sent right after the
// create may still be refused.
func waitForBinding(t *testing.T, kube kubernetes.Interface, ns, user, clusterRole string) {
	t.Helper()
	ctx := context.Background()
	role, err := kube.RbacV1().ClusterRoles().Get(ctx, clusterRole, metav1.GetOptions{})
	require.NoError(t, err)
	var attrs *authorizationv1.ResourceAttributes
	for _, r := range role.Rules {
		if len(r.Verbs) > 0 && len(r.APIGroups) > 0 && len(r.Resources) > 0 && len(r.ResourceNames) == 0 {
			attrs = &authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
			break
		}
	}
	require.NotNil(t, attrs, "cluster role %s has no resource rule to probe", clusterRole)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs},
		}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})
	require.NoError(t, err, "%s's binding to %s in %s never took effect", user, clusterRole, ns)
}

func hangarAs(t *testing.T, c *framework.Cluster, user string) versioned.Interface {
	t.Helper()
	cfg, err := c.UserConfig(user)
	require.NoError(t, err)
	client, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

// TestThroughKubeAPIServer runs virt-api behind a real kube-apiserver, registered through
// APIServices, with delegated authentication, RBAC and admission, as in a cluster.
func TestThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()

	t.Run("kubectl sees the kinds", func(t *testing.T) {
		out, err := c.Kubectl("api-resources", "--api-group=kubevirt.io")
		require.NoError(t, err, out)
		for _, kind := range []string{"VirtualMachine", "VirtualMachineInstance", "VirtualMachineInstanceReplicaSet"} {
			assert.Contains(t, out, kind)
		}
		out, err = c.Kubectl("get", "vms,vmis,vmirs", "-A")
		require.NoError(t, err, out)
		assert.Contains(t, out, "No resources found")
		out, err = c.Kubectl("explain", "virtualmachine.spec.runStrategy")
		require.NoError(t, err, out)
		assert.Contains(t, out, "RerunOnFailure")
	})

	t.Run("kubectl validates fields on the server", func(t *testing.T) {
		// kubectl learns from /openapi/v3 that a write takes fieldValidation: virt-api's v2
		// document lists no query parameters for the writes of KubeVirt's groups, as
		// KubeVirt's does, and v3 keeps them. Without it kubectl validates on its side, with
		// other words.
		manifest := filepath.Join(t.TempDir(), "vm.yaml")
		require.NoError(t, os.WriteFile(manifest, []byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: strict, namespace: default}
spec:
  runStrategy: Halted
  bogus: 1
  template: {spec: {domain: {devices: {}}}}
`), 0o600))
		out, err := c.Kubectl("create", "--dry-run=server", "--validate=strict", "-f", manifest)
		require.Error(t, err, out)
		assert.Contains(t, out, `strict decoding error: unknown field "spec.bogus"`)
	})

	t.Run("admission: no objects in a namespace that does not exist", func(t *testing.T) {
		_, err := c.Hangar.KubevirtV1().VirtualMachines("nowhere").Create(ctx, newVM("lost", v1.RunStrategyHalted), metav1.CreateOptions{})
		require.Error(t, err)
		assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	})

	t.Run("RBAC: view reads, edit writes", func(t *testing.T) {
		ns := "team-a"
		createNamespace(t, c.Kube, ns)
		bindRole(t, c.Kube, ns, "viewer", "view")
		bindRole(t, c.Kube, ns, "editor", "edit")
		viewer, editor, stranger := hangarAs(t, c, "viewer"), hangarAs(t, c, "editor"), hangarAs(t, c, "stranger")

		_, err := viewer.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("by-viewer", v1.RunStrategyHalted), metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "view must not create, got %v", err)

		created, err := editor.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("by-editor", v1.RunStrategyHalted), metav1.CreateOptions{})
		require.NoError(t, err, "edit creates")
		assert.Equal(t, int64(1), created.Generation)

		list, err := viewer.KubevirtV1().VirtualMachines(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "view lists")
		assert.Len(t, list.Items, 1)

		_, err = stranger.KubevirtV1().VirtualMachines(ns).List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "no binding, no access, got %v", err)
		_, err = editor.KubevirtV1().VirtualMachines("default").List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "a binding in one namespace grants nothing in another, got %v", err)

		// The status belongs to the controllers: edit cannot write it.
		created.Status.Ready = true
		_, err = editor.KubevirtV1().VirtualMachines(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "edit must not write status, got %v", err)
	})

	t.Run("the user is who kube-apiserver says", func(t *testing.T) {
		ns := "audit"
		createNamespace(t, c.Kube, ns)
		bindRole(t, c.Kube, ns, "alice", "edit")
		vm, err := hangarAs(t, c, "alice").KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("mine", v1.RunStrategyHalted), metav1.CreateOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, vm.ManagedFields)
		out, err := c.Kubectl("auth", "can-i", "create", "virtualmachines.kubevirt.io", "-n", ns, "--as", "alice")
		require.NoError(t, err, out)
		assert.Equal(t, "yes", strings.TrimSpace(out))
	})

	// The walk-arounds of the body guard were seen through the aggregator, which cuts
	// a request off after 34 s with a 504 while virt-api goes on decoding.
	t.Run("the body guard refuses costly quantities in every form an editor sends", func(t *testing.T) {
		ns := "guarded"
		createNamespace(t, c.Kube, ns)
		bindRole(t, c.Kube, ns, "mallory", "edit")
		cfg, err := c.UserConfig("mallory")
		require.NoError(t, err)
		checkGuardVariants(t, cfg, hangarAs(t, c, "mallory"), ns, false)
	})

	// virt-api caches the verification of kube-apiserver's front-proxy certificate
	// (pkg/apiserver/frontproxy); the subtest above has filled that cache.
	t.Run("only kube-apiserver's front proxy may say who the user is", func(t *testing.T) {
		rogueCA, err := framework.NewCA(t.TempDir(), "rogue")
		require.NoError(t, err)
		rogue, err := rogueCA.ClientCert("rogue", "front-proxy-client")
		require.NoError(t, err)
		intruder, err := c.FrontProxyCA.ClientCert("intruder", "intruder")
		require.NoError(t, err)

		for _, tc := range []struct {
			name    string
			cert    *framework.KeyPair
			allowed bool
		}{
			{"kube-apiserver's front-proxy certificate", c.FrontProxyClient, true},
			{"the front proxy's name from another CA", rogue, false},
			{"the front-proxy CA's certificate for another name", intruder, false},
			{"no certificate", nil, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := directAs(t, c, tc.cert, "alice", "/apis/kubevirt.io/v1/namespaces/audit/virtualmachines")
				if tc.allowed {
					assert.Equal(t, http.StatusOK, code, body)
					return
				}
				// Refused as nobody (401), or as the anonymous user RBAC does not allow (403).
				assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, code, body)
				assert.NotContains(t, body, "alice")
			})
		}
	})

	t.Run("garbage collection cascades and orphans across the aggregated API", func(t *testing.T) {
		ns := "gc"
		createNamespace(t, c.Kube, ns)
		vms, vmis := c.Hangar.KubevirtV1().VirtualMachines(ns), c.Hangar.KubevirtV1().VirtualMachineInstances(ns)
		ownedInstance := func(vm *v1.VirtualMachine) {
			vmi := newVMI(vm.Name)
			vmi.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(vm, v1.SchemeGroupVersion.WithKind("VirtualMachine"))}
			_, err := vmis.Create(ctx, vmi, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		cascaded, err := vms.Create(ctx, newVM("cascaded", v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)
		ownedInstance(cascaded)
		orphaned, err := vms.Create(ctx, newVM("orphaned", v1.RunStrategyAlways), metav1.CreateOptions{})
		require.NoError(t, err)
		ownedInstance(orphaned)

		require.NoError(t, vms.Delete(ctx, "cascaded", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
		require.NoError(t, vms.Delete(ctx, "orphaned", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}))

		require.Eventually(t, func() bool {
			_, err := vmis.Get(ctx, "cascaded", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 90*time.Second, 200*time.Millisecond, "the garbage collector deletes the instance of a deleted VM")
		require.Eventually(t, func() bool {
			_, err := vms.Get(ctx, "orphaned", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 90*time.Second, 200*time.Millisecond, "an orphaning delete completes")
		vmi, err := vmis.Get(ctx, "orphaned", metav1.GetOptions{})
		require.NoError(t, err, "--cascade=orphan keeps the instance")
		assert.Empty(t, vmi.OwnerReferences)
	})

	t.Run("RBAC on actions: edit starts, view does not", func(t *testing.T) {
		ns := "actions-rbac"
		createNamespace(t, c.Kube, ns)
		bindRole(t, c.Kube, ns, "operator", "edit")
		bindRole(t, c.Kube, ns, "auditor", "view")
		_, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, newVM("guarded", v1.RunStrategyHalted), metav1.CreateOptions{})
		require.NoError(t, err)
		for _, path := range []string{
			"/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachines/guarded/start",
			"/apis/kubevirt.io/v1/namespaces/" + ns + "/virtualmachines/guarded/start",
		} {
			var code int
			hangarAs(t, c, "auditor").Discovery().RESTClient().Put().AbsPath(path).Do(ctx).StatusCode(&code)
			assert.Equal(t, http.StatusForbidden, code, "view must not start VMs: %s", path)
		}
		var code int
		hangarAs(t, c, "operator").Discovery().RESTClient().Put().AbsPath(
			"/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachines/guarded/start").Do(ctx).StatusCode(&code)
		assert.Equal(t, http.StatusAccepted, code, "edit starts VMs")
		vm, err := c.Hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "guarded", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.RunStrategyAlways, *vm.Spec.RunStrategy)
	})

	t.Run("RBAC on consoles: view cannot open one, edit can", func(t *testing.T) {
		ns := "console-rbac"
		createNamespace(t, c.Kube, ns)
		bindRole(t, c.Kube, ns, "watcher", "view")
		bindRole(t, c.Kube, ns, "operator", "edit")
		_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("guest"), metav1.CreateOptions{})
		require.NoError(t, err)
		console := "/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/guest/console"
		var code int
		hangarAs(t, c, "watcher").Discovery().RESTClient().Get().AbsPath(console).Do(ctx).StatusCode(&code)
		assert.Equal(t, http.StatusForbidden, code, "view must not open consoles")
		hangarAs(t, c, "operator").Discovery().RESTClient().Get().AbsPath(console).Do(ctx).StatusCode(&code)
		assert.Equal(t, http.StatusBadRequest, code, "edit may: the refusal is only that the guest does not run")

		// A role that grants get on the console (KubeVirt's) but not create does not open it.
		_, err = c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "console-get-only"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"subresources.kubevirt.io"},
				Resources: []string{"virtualmachineinstances/console"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "reader-console-get-only"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "console-get-only"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "reader"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		bindRole(t, c.Kube, ns, "reader", "view")
		hangarAs(t, c, "reader").Discovery().RESTClient().Get().AbsPath(console).Do(ctx).StatusCode(&code)
		assert.Equal(t, http.StatusForbidden, code, "get alone does not open a console: create is required too")
	})
	t.Run("RBAC on the guest agent: view reads its reports, only edit freezes", func(t *testing.T) {
		ns := "agent-rbac"
		createNamespace(t, c.Kube, ns)
		bindRole(t, c.Kube, ns, "watcher", "view")
		bindRole(t, c.Kube, ns, "operator", "edit")
		_, err := c.Hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, newVMI("guest"), metav1.CreateOptions{})
		require.NoError(t, err)
		base := "/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/guest/"
		var code int
		for _, report := range []string{"guestosinfo", "userlist", "filesystemlist"} {
			hangarAs(t, c, "watcher").Discovery().RESTClient().Get().AbsPath(base + report).Do(ctx).StatusCode(&code)
			assert.Equal(t, http.StatusConflict, code, "view may read %s: the refusal is only that the guest does not run", report)
			hangarAs(t, c, "stranger").Discovery().RESTClient().Get().AbsPath(base + report).Do(ctx).StatusCode(&code)
			assert.Equal(t, http.StatusForbidden, code, "no binding, no %s", report)
		}
		for _, action := range []string{"freeze", "unfreeze"} {
			hangarAs(t, c, "watcher").Discovery().RESTClient().Put().AbsPath(base + action).Body([]byte(`{"unfreezeTimeout":"1m"}`)).Do(ctx).StatusCode(&code)
			assert.Equal(t, http.StatusForbidden, code, "view must not %s a guest", action)
			hangarAs(t, c, "operator").Discovery().RESTClient().Put().AbsPath(base + action).Body([]byte(`{"unfreezeTimeout":"1m"}`)).Do(ctx).StatusCode(&code)
			assert.Equal(t, http.StatusConflict, code, "edit may %s: the refusal is only that the guest does not run", action)
		}
	})
}

// directAs sends a GET straight to virt-api, past kube-apiserver, presenting cert (none if nil)
// with the front proxy's header naming user; it returns the status code and body.
func directAs(t *testing.T, c *framework.Cluster, cert *framework.KeyPair, user, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.VirtAPI.URL()+path, nil)
	require.NoError(t, err)
	req.Header.Set("X-Remote-User", user)
	return direct(t, c, cert, req)
}

// direct sends req straight to virt-api, presenting cert (none if nil); it returns the status
// code and body.
func direct(t *testing.T, c *framework.Cluster, cert *framework.KeyPair, req *http.Request) (int, string) {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(c.CA.PEM))
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	if cert != nil {
		pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		require.NoError(t, err)
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}
