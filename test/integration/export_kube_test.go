//go:build kube

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	exportcontroller "github.com/hangarvm/hangar/pkg/controller/export"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	exportclient "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned"
	exportinformers "github.com/hangarvm/hangar/pkg/generated/export/informers/externalversions"
	kvinformers "github.com/hangarvm/hangar/pkg/generated/informers/externalversions"
	"github.com/hangarvm/hangar/test/integration/framework"
)

func exportClientAs(t *testing.T, c *framework.Cluster, user string) exportclient.Interface {
	t.Helper()
	cfg, err := c.UserConfig(user)
	require.NoError(t, err)
	client, err := exportclient.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

func claimExportOf(name, claim string) *exportv1beta1.VirtualMachineExport {
	return &exportv1beta1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: exportv1beta1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To(""), Kind: "PersistentVolumeClaim", Name: claim}}}
}

// TestExportsThroughKubeAPIServer: export.kubevirt.io is served by virt-api through its
// APIService, validated with field paths, reachable with the aggregated roles, and refused
// (403) to a user who cannot read what it would serve.
func TestExportsThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	ns := "exports"
	createNamespace(t, c.Kube, ns)
	admin, err := exportclient.NewForConfig(c.Admin)
	require.NoError(t, err)

	t.Run("discovery and OpenAPI", func(t *testing.T) {
		out, err := c.Kubectl("api-resources", "--api-group=export.kubevirt.io", "-o", "wide")
		require.NoError(t, err, out)
		for _, want := range []string{"virtualmachineexports", "vmexport", "VirtualMachineExport"} {
			assert.Contains(t, out, want)
		}
		out, err = c.Kubectl("explain", "virtualmachineexport.spec.tokenSecretRef")
		require.NoError(t, err, out)
		assert.Contains(t, out, "token")
	})

	t.Run("a valid export is created and listed", func(t *testing.T) {
		e := claimExportOf("dump-export", "dump")
		e.Spec.TTLDuration = &metav1.Duration{Duration: time.Hour}
		created, err := admin.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, e, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, e.Spec, created.Spec)
		out, err := c.Kubectl("-n", ns, "get", "vmexport")
		require.NoError(t, err, out)
		for _, want := range []string{"SOURCEKIND", "SOURCENAME", "PHASE", "dump-export", "PersistentVolumeClaim"} {
			assert.Contains(t, out, want)
		}
	})

	t.Run("bad input is a 422 with field paths", func(t *testing.T) {
		bad := claimExportOf("bad", "Bad_Claim")
		bad.Spec.TTLDuration = &metav1.Duration{Duration: -time.Minute}
		_, err := admin.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, bad, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		for _, want := range []string{"spec.source.name", "spec.ttlDuration"} {
			assert.Contains(t, err.Error(), want)
		}
		snap := claimExportOf("snap", "s")
		snap.Spec.Source = corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: "s"}
		_, err = admin.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, snap, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "not served yet")
		long := claimExportOf(strings.Repeat("e", 52), "dump")
		_, err = admin.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, long, metav1.CreateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "metadata.name")
	})

	t.Run("the spec is immutable", func(t *testing.T) {
		got, err := admin.ExportV1beta1().VirtualMachineExports(ns).Get(ctx, "dump-export", metav1.GetOptions{})
		require.NoError(t, err)
		got.Spec.Source.Name = "other"
		_, err = admin.ExportV1beta1().VirtualMachineExports(ns).Update(ctx, got, metav1.UpdateOptions{})
		require.True(t, apierrors.IsInvalid(err), "got %v", err)
		assert.Contains(t, err.Error(), "spec: Forbidden")
	})

	t.Run("roles, and the user's own right to read what is served", func(t *testing.T) {
		bindRole(t, c.Kube, ns, "export-viewer", "view")
		bindRole(t, c.Kube, ns, "export-editor", "edit")
		viewer, editor := exportClientAs(t, c, "export-viewer"), exportClientAs(t, c, "export-editor")
		eventually(t, "view lists exports", func() (bool, string) {
			_, err := viewer.ExportV1beta1().VirtualMachineExports(ns).List(ctx, metav1.ListOptions{})
			return err == nil, fmt.Sprint(err)
		})
		_, err := viewer.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, claimExportOf("by-viewer", "dump"), metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "view may not create exports; got %v", err)
		eventually(t, "edit creates exports", func() (bool, string) {
			_, err := editor.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, claimExportOf("by-editor", "dump"), metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})

		// One who may create exports but not read the claim cannot export it.
		_, err = c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "exporter-only"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"export.kubevirt.io"}, Resources: []string{"virtualmachineexports"}, Verbs: []string{"create"}}}},
			metav1.CreateOptions{})
		require.NoError(t, err)
		bindRole(t, c.Kube, ns, "exporter", "exporter-only")
		exporter := exportClientAs(t, c, "exporter")
		eventually(t, "the exporter is refused the claim, the right named", func() (bool, string) {
			_, err := exporter.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, claimExportOf("by-exporter", "dump"), metav1.CreateOptions{})
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(),
				`an export serves the claim's contents: user "exporter" may not get persistentvolumeclaims`), fmt.Sprint(err)
		})
		// Reading that one claim is enough; another claim, or a token Secret it may not read, is not.
		_, err = c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-dump"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, ResourceNames: []string{"dump"}, Verbs: []string{"get"}}}},
			metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "exporter-read-dump"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-dump"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "exporter"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		eventually(t, "the exporter exports the claim it may read", func() (bool, string) {
			_, err := exporter.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, claimExportOf("by-exporter", "dump"), metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
		_, err = exporter.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, claimExportOf("other", "other-claim"), metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "another claim: got %v", err)
		withToken := claimExportOf("with-token", "dump")
		withToken.Spec.TokenSecretRef = ptr.To("someone-elses-token")
		_, err = exporter.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, withToken, metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "a Secret it may not read: got %v", err)
		assert.Contains(t, err.Error(), "may not get secrets")
		vmExport := claimExportOf("vm", "")
		vmExport.Spec.Source = corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"}
		_, err = exporter.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, vmExport, metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "a VM it may not read: got %v", err)
		assert.Contains(t, err.Error(), "may not get virtualmachines.kubevirt.io")
	})
}

// runExportController runs virt-controller's export controller in-process, as virt-controller's
// service account with the RBAC of artifacts/.
func runExportController(t *testing.T, c *framework.Cluster) {
	t.Helper()
	cfg := asVirtController(t, c)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	kv, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	exports, err := exportclient.NewForConfig(cfg)
	require.NoError(t, err)
	ef, kvf, kf := exportinformers.NewSharedInformerFactory(exports, 0), kvinformers.NewSharedInformerFactory(kv, 0), informers.NewSharedInformerFactory(kube, 0)
	sf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = exportcontroller.ServerSelector()
	}))
	ctrl, err := exportcontroller.New(exportcontroller.Clients{Exports: exports, Kube: kube}, exportcontroller.Informers{
		Exports: ef.Export().V1beta1().VirtualMachineExports(), Pods: sf.Core().V1().Pods(), Services: sf.Core().V1().Services(),
		Claims: kf.Core().V1().PersistentVolumeClaims(), VMs: kvf.Kubevirt().V1().VirtualMachines(), VMIs: kvf.Kubevirt().V1().VirtualMachineInstances(),
	}, func() string { return "hangar/virt-launcher:test" }, record.NewFakeRecorder(1000))
	require.NoError(t, err)
	runUntilCleanup(t, func(ctx context.Context) error { return ctrl.Run(ctx, 2) }, ef, kvf, kf, sf)
}

// TestExportControllerThroughKubeAPIServer: the export controller, as virt-controller with its
// RBAC, makes an export's token and key-pair Secrets, Service and server pod in the tenant's
// namespace, and the links once the pod is ready (the test plays the claim's binding and the
// kubelet); the pod passes Pod Security restricted (the namespace enforces it).
func TestExportControllerThroughKubeAPIServer(t *testing.T) {
	c := framework.StartAggregated(t)
	ctx := context.Background()
	runExportController(t, c)
	ns := "exporting"
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	admin, err := exportclient.NewForConfig(c.Admin)
	require.NoError(t, err)

	claim, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claimOf("dump", "local"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, claimExportOf("dump-export", "dump"), metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, "the export says its claim is not bound yet", func() (bool, string) {
		e, err := admin.ExportV1beta1().VirtualMachineExports(ns).Get(ctx, "dump-export", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return e.Status.Phase == exportv1beta1.Pending && strings.Contains(fmt.Sprint(e.Status.Conditions), "pvcPending"), fmt.Sprint(e.Status)
	})

	claim.Status.Phase = corev1.ClaimBound
	_, err = c.Kube.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	require.NoError(t, err)
	var pod *corev1.Pod
	eventually(t, "the server pod is made", func() (bool, string) {
		pod, err = c.Kube.CoreV1().Pods(ns).Get(ctx, "virt-export-dump-export", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	svc, err := c.Kube.CoreV1().Services(ns).Get(ctx, "virt-export-dump-export", metav1.GetOptions{})
	require.NoError(t, err)
	tlsSecret, err := c.Kube.CoreV1().Secrets(ns).Get(ctx, "virt-export-dump-export-tls", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(tlsSecret.Data[corev1.TLSCertKey]), svc.Annotations[exportcontroller.CertificateAnnotation])
	token, err := c.Kube.CoreV1().Secrets(ns).Get(ctx, "export-token-dump-export", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, token.Data["token"])

	// The kubelet's part: the pod runs and is ready.
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	_, err = c.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "the export is ready with its links", func() (bool, string) {
		e, err := admin.ExportV1beta1().VirtualMachineExports(ns).Get(ctx, "dump-export", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ok := e.Status.Phase == exportv1beta1.Ready && e.Status.Links != nil && e.Status.Links.Internal != nil &&
			e.Status.Links.Internal.Cert == svc.Annotations[exportcontroller.CertificateAnnotation] &&
			len(e.Status.Links.Internal.Volumes) == 1 && e.Status.TokenSecretRef != nil && *e.Status.TokenSecretRef == "export-token-dump-export" &&
			e.Status.ServiceName == "virt-export-dump-export"
		return ok, fmt.Sprint(e.Status)
	})
}
