//go:build kube

// Package operator tests hangar-operator's controller against a real kube-apiserver, with
// the install manifests applied and the operator acting as its own ServiceAccount: what it
// writes, its PKI, its preflight refusals and Hangar's removal. No kubelet runs, so the
// components it deploys never start; the deployed system is tested on the local cluster
// (test/e2e, test/install).
package operator

import (
	"context"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/hangarvm/hangar/artifacts/monitoring"
	operatorv1alpha1 "github.com/hangarvm/hangar/pkg/apis/operator/v1alpha1"
	kubevirtclient "github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	operatorclient "github.com/hangarvm/hangar/pkg/generated/operator/clientset/versioned"
	"github.com/hangarvm/hangar/pkg/operator/controller"
	"github.com/hangarvm/hangar/pkg/operator/pki"
	"github.com/hangarvm/hangar/pkg/operator/preflight"
	"github.com/hangarvm/hangar/pkg/operator/render"
	"github.com/hangarvm/hangar/test/integration/framework"
)

var testImages = render.Images{VirtAPI: "registry.test/hangar/virt-api:v0", VirtController: "registry.test/hangar/virt-controller:v0",
	VirtHandler: "registry.test/hangar/virt-handler:v0", VirtLauncher: "registry.test/hangar/virt-launcher:v0", Etcd: "registry.test/hangar/etcd:v0"}

type env struct {
	t        *testing.T
	api      *framework.KubeAPIServer
	kubectl  func(args ...string) string
	operator operatorclient.Interface
}

// start runs kube-apiserver with the install manifests applied and a default StorageClass,
// and the operator's controller as the hangar-operator ServiceAccount.
func start(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	api, err := framework.StartKubeAPIServer(dir, 0)
	require.NoError(t, err)
	t.Cleanup(api.Stop)
	// Garbage collection: removal deletes the components in the foreground.
	require.NoError(t, api.StartControllerManager())
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	require.NoError(t, framework.WriteKubeconfig(api.Admin, kubeconfig))
	e := &env{t: t, api: api}
	e.kubectl = func(args ...string) string {
		t.Helper()
		out, err := runKubectl(kubeconfig, dir, args...)
		require.NoError(t, err, out)
		return out
	}
	e.kubectl("apply", "-k", filepath.Join(framework.RepoRoot(), "artifacts", "install"))
	e.kubectl("wait", "--for=condition=Established", "crd/hangars.hangarvm.io")
	e.setDefaultStorageClass(true)

	ctx := context.Background()
	token, err := api.Kube.CoreV1().ServiceAccounts(render.Namespace).CreateToken(ctx, "hangar-operator",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := &rest.Config{Host: api.URL, TLSClientConfig: rest.TLSClientConfig{CAData: api.CA.PEM}, BearerToken: token.Status.Token}
	clients := controller.Clients{
		Kube:          kubernetes.NewForConfigOrDie(cfg),
		Dynamic:       dynamic.NewForConfigOrDie(cfg),
		Operator:      operatorclient.NewForConfigOrDie(cfg),
		Aggregator:    aggregatorclient.NewForConfigOrDie(cfg),
		APIExtensions: apiextensionsclient.NewForConfigOrDie(cfg),
		KubeVirt:      kubevirtclient.NewForConfigOrDie(cfg),
	}
	c, err := controller.New(clients, controller.Config{Version: "v0.0.0-test", Images: testImages, Resync: 5 * time.Second})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	e.operator = operatorclient.NewForConfigOrDie(api.Admin)
	return e
}

func runKubectl(kubeconfig, dir string, args ...string) (string, error) {
	cache, err := os.MkdirTemp(dir, "kubectl-cache-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(cache)
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig, "--cache-dir", cache}, args...)...).CombinedOutput()
	return string(out), err
}

func (e *env) setDefaultStorageClass(isDefault bool) {
	ctx := context.Background()
	classes := e.api.Kube.StorageV1().StorageClasses()
	_ = classes.Delete(ctx, "standard", metav1.DeleteOptions{})
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: "example.com/none"}
	if isDefault {
		sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	_, err := classes.Create(ctx, sc, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

func (e *env) createHangar(spec operatorv1alpha1.HangarSpec) {
	_, err := e.operator.HangarvmV1alpha1().Hangars().Create(context.Background(),
		&operatorv1alpha1.Hangar{ObjectMeta: metav1.ObjectMeta{Name: operatorv1alpha1.Name}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

// waitCondition waits until the Hangar object's condition has the status and reason.
func (e *env) waitCondition(conditionType string, status metav1.ConditionStatus, reason string) *operatorv1alpha1.Hangar {
	e.t.Helper()
	var h *operatorv1alpha1.Hangar
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		h, err = e.operator.HangarvmV1alpha1().Hangars().Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(h.Status.Conditions, conditionType)
		return c != nil && c.Status == status && c.Reason == reason, nil
	})
	require.NoError(e.t, err, "condition %s=%s reason %s; status: %+v", conditionType, status, reason, h.Status)
	return h
}

func (e *env) secret(name string) *corev1.Secret {
	e.t.Helper()
	var s *corev1.Secret
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		s, err = e.api.Kube.CoreV1().Secrets(render.Namespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	require.NoError(e.t, err, "Secret %s", name)
	return s
}

// TestInstallAndRemove: from a Hangar object the operator writes its PKI, the components and
// the APIServices (trusting the CA it made), reports that it waits for etcd, and removes all
// of it when the object is deleted, the APIServices first.
func TestInstallAndRemove(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.createHangar(operatorv1alpha1.HangarSpec{UninstallStrategy: operatorv1alpha1.UninstallRemoveWorkloads})

	h := e.waitCondition(operatorv1alpha1.ConditionProgressing, metav1.ConditionTrue, controller.ReasonWaitingPhase)
	assert.Contains(t, meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionProgressing).Message, "rolling out etcd")
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionAvailable).Status)
	assert.Equal(t, []string{controller.Finalizer}, h.Finalizers)
	assert.Equal(t, "v0.0.0-test", h.Status.TargetVersion)

	// The PKI: virt-api's serving certificate verifies against the bundle the APIServices carry.
	ca := e.secret(pki.HangarCA)
	assert.Equal(t, render.ManagedBy, ca.Labels[render.ManagedByLabel])
	apiTLS := e.secret(pki.VirtAPITLS)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca.Data[pki.KeyBundle]))
	certs, err := pki.ParseCertificates(apiTLS.Data[pki.KeyCert])
	require.NoError(t, err)
	_, err = certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: "virt-api.hangar.svc"})
	require.NoError(t, err)
	etcdServer := e.secret(pki.EtcdServer)
	service, err := e.api.Kube.CoreV1().Services(render.Namespace).Get(ctx, render.EtcdName, metav1.GetOptions{})
	require.NoError(t, err)
	etcdCerts, err := pki.ParseCertificates(etcdServer.Data[pki.KeyCert])
	require.NoError(t, err)
	assert.Contains(t, ipStrings(etcdCerts[0]), service.Spec.ClusterIP, "etcd's certificate names the address virt-api dials")
	assert.Contains(t, string(e.secret(pki.EncryptionSecret).Data[pki.KeyEncryption]), "secretbox")

	etcd, err := e.api.Kube.AppsV1().StatefulSets(render.Namespace).Get(ctx, render.EtcdName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, testImages.Etcd, etcd.Spec.Template.Spec.Containers[0].Image)
	_, err = e.api.Kube.AppsV1().Deployments(render.Namespace).Get(ctx, render.VirtAPIName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "virt-api waits until etcd is rolled out")

	// No kubelet runs etcd here: say it is ready, as the StatefulSet controller would.
	etcd.Status = appsv1.StatefulSetStatus{ObservedGeneration: etcd.Generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1,
		AvailableReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r1"}
	_, err = e.api.Kube.AppsV1().StatefulSets(render.Namespace).UpdateStatus(ctx, etcd, metav1.UpdateOptions{})
	require.NoError(t, err)
	h = e.waitCondition(operatorv1alpha1.ConditionProgressing, metav1.ConditionTrue, controller.ReasonWaitingPhase)
	aggregator := aggregatorclient.NewForConfigOrDie(e.api.Admin)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := aggregator.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{LabelSelector: render.ManagedByLabel + "=" + render.ManagedBy})
		if err != nil || len(list.Items) < len(preflight.APIServices) {
			return false, nil
		}
		_, err = e.api.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "virt-api-validator", metav1.GetOptions{})
		return err == nil, nil
	})
	require.NoError(t, err, "virt-api's APIServices and webhook are deployed once etcd is ready")
	for _, name := range preflight.APIServices {
		svc, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, ca.Data[pki.KeyBundle], svc.Spec.CABundle, name)
		assert.Equal(t, "v0.0.0-test", svc.Labels[render.VersionLabel])
	}
	webhook, err := e.api.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "virt-api-validator", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ca.Data[pki.KeyBundle], webhook.Webhooks[0].ClientConfig.CABundle)
	api, err := e.api.Kube.AppsV1().Deployments(render.Namespace).Get(ctx, render.VirtAPIName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, testImages.VirtAPI, api.Spec.Template.Spec.Containers[0].Image)
	assert.NotEmpty(t, api.Spec.Template.Annotations[render.TrustHashAnnotation])

	// Removal. No virt-api answers, so nobody can tell whether VMs exist: with
	// RemoveWorkloads the operator removes Hangar regardless.
	require.NoError(t, e.operator.HangarvmV1alpha1().Hangars().Delete(ctx, operatorv1alpha1.Name, metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.operator.HangarvmV1alpha1().Hangars().Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(t, err, "the Hangar object is gone once Hangar is removed")
	services, err := aggregator.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{LabelSelector: render.ManagedByLabel + "=" + render.ManagedBy})
	require.NoError(t, err)
	assert.Empty(t, services.Items)
	secrets, err := e.api.Kube.CoreV1().Secrets(render.Namespace).List(ctx, metav1.ListOptions{LabelSelector: render.ManagedByLabel + "=" + render.ManagedBy})
	require.NoError(t, err)
	assert.Empty(t, secrets.Items)
	sets, err := e.api.Kube.AppsV1().StatefulSets(render.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, sets.Items)
	deployments, err := e.api.Kube.AppsV1().Deployments(render.Namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, deployments.Items, 1, "hangar-operator's own stays")
}

func ipStrings(c *x509.Certificate) []string {
	var out []string
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// TestPreflightRefuses: the operator deploys nothing while KubeVirt's CustomResourceDefinitions
// exist or no StorageClass can hold etcd, and says why in the Degraded condition.
func TestPreflightRefuses(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	extensions := apiextensionsclient.NewForConfigOrDie(e.api.Admin)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "virtualmachines.kubevirt.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kubevirt.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "virtualmachines", Singular: "virtualmachine", Kind: "VirtualMachine"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	_, err := extensions.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	e.createHangar(operatorv1alpha1.HangarSpec{})

	h := e.waitCondition(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, preflight.ReasonKubeVirtInstalled)
	assert.Contains(t, meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionDegraded).Message, "virtualmachines.kubevirt.io")
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionAvailable).Status)
	secrets, err := e.api.Kube.CoreV1().Secrets(render.Namespace).List(ctx, metav1.ListOptions{LabelSelector: render.ManagedByLabel + "=" + render.ManagedBy})
	require.NoError(t, err)
	assert.Empty(t, secrets.Items, "nothing is deployed")

	require.NoError(t, extensions.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}))
	e.setDefaultStorageClass(false)
	h = e.waitCondition(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, preflight.ReasonNoStorageClass)
	assert.True(t, strings.Contains(meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionDegraded).Message, "default StorageClass"))

	e.setDefaultStorageClass(true)
	e.waitCondition(operatorv1alpha1.ConditionProgressing, metav1.ConditionTrue, controller.ReasonWaitingPhase)
	e.waitCondition(operatorv1alpha1.ConditionDegraded, metav1.ConditionFalse, controller.ReasonAsExpected)
}

// TestInvalidSpecRefused: what the schema cannot check is refused in the status, with the
// field's path.
func TestInvalidSpecRefused(t *testing.T) {
	e := start(t)
	e.createHangar(operatorv1alpha1.HangarSpec{Etcd: operatorv1alpha1.EtcdSpec{Storage: ptr.To(resource.MustParse("1Gi"))}})
	h := e.waitCondition(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, controller.ReasonInvalidSpec)
	assert.Contains(t, meta.FindStatusCondition(h.Status.Conditions, operatorv1alpha1.ConditionDegraded).Message, "spec.etcd.storage")
}

// TestMonitoringObjects: the dashboard's ConfigMap is always applied; the PodMonitors and the
// PrometheusRule once the cluster serves the Prometheus Operator's kinds (their
// CustomResourceDefinitions may come after Hangar), and they go with Hangar. The scraper's
// token Secret of the release manifest gets its token.
func TestMonitoringObjects(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.createHangar(operatorv1alpha1.HangarSpec{UninstallStrategy: operatorv1alpha1.UninstallRemoveWorkloads})
	e.waitCondition(operatorv1alpha1.ConditionProgressing, metav1.ConditionTrue, controller.ReasonWaitingPhase)

	dashboard, err := e.api.Kube.CoreV1().ConfigMaps(render.Namespace).Get(ctx, monitoring.DashboardConfigMap, metav1.GetOptions{})
	require.NoError(t, err, "the dashboard is applied with or without a Prometheus Operator")
	assert.Equal(t, "1", dashboard.Labels["grafana_dashboard"])
	assert.Equal(t, string(monitoring.Dashboard()), dashboard.Data[monitoring.DashboardKey])
	token := e.secret("hangar-metrics-reader-token")
	require.Eventually(t, func() bool {
		token = e.secret("hangar-metrics-reader-token")
		return len(token.Data["token"]) > 0
	}, 30*time.Second, 200*time.Millisecond, "the scraper's token is issued")

	// The Prometheus Operator's kinds appear after Hangar was installed.
	extensions := apiextensionsclient.NewForConfigOrDie(e.api.Admin)
	for _, kind := range []apiextensionsv1.CustomResourceDefinitionNames{
		{Plural: "podmonitors", Singular: "podmonitor", Kind: "PodMonitor", ListKind: "PodMonitorList"},
		{Plural: "prometheusrules", Singular: "prometheusrule", Kind: "PrometheusRule", ListKind: "PrometheusRuleList"},
	} {
		_, err := extensions.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: kind.Plural + "." + monitoring.Group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: monitoring.Group, Scope: apiextensionsv1.NamespaceScoped, Names: kind,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: monitoring.Version, Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	admin := dynamic.NewForConfigOrDie(e.api.Admin)
	podMonitors := admin.Resource(schema.GroupVersionResource{Group: monitoring.Group, Version: monitoring.Version, Resource: "podmonitors"}).Namespace(render.Namespace)
	rules := admin.Resource(schema.GroupVersionResource{Group: monitoring.Group, Version: monitoring.Version, Resource: "prometheusrules"}).Namespace(render.Namespace)
	managed := metav1.ListOptions{LabelSelector: render.ManagedByLabel + "=" + render.ManagedBy}
	require.Eventually(t, func() bool {
		monitors, err := podMonitors.List(ctx, managed)
		if err != nil || len(monitors.Items) != 3 {
			return false
		}
		list, err := rules.List(ctx, managed)
		return err == nil && len(list.Items) == 1
	}, 30*time.Second, 500*time.Millisecond, "the PodMonitors and the PrometheusRule are applied once their kinds are served")
	rule, err := rules.Get(ctx, "hangar", metav1.GetOptions{})
	require.NoError(t, err)
	groups, _, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	require.NoError(t, err)
	assert.Len(t, groups, 4, "the alerts' three groups and KubeVirt's recording rules")
	handler, err := podMonitors.Get(ctx, "virt-handler", metav1.GetOptions{})
	require.NoError(t, err)
	endpoints, _, _ := unstructured.NestedSlice(handler.Object, "spec", "podMetricsEndpoints")
	require.Len(t, endpoints, 1)
	assert.Equal(t, "metrics", endpoints[0].(map[string]any)["port"])

	require.NoError(t, e.operator.HangarvmV1alpha1().Hangars().Delete(ctx, operatorv1alpha1.Name, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := e.operator.HangarvmV1alpha1().Hangars().Get(ctx, operatorv1alpha1.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 200*time.Millisecond, "Hangar is removed")
	monitors, err := podMonitors.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, monitors.Items, "the PodMonitors go with Hangar")
	list, err := rules.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "the PrometheusRule goes with Hangar")
	_, err = e.api.Kube.CoreV1().ConfigMaps(render.Namespace).Get(ctx, monitoring.DashboardConfigMap, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the dashboard goes with Hangar")
}
