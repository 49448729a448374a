//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// apiServiceAlertFor is the `for` of HangarAPIServiceUnavailable in this test's Prometheus:
// promtool's tests check the rule's own 5 minutes (artifacts/monitoring/rules-test.yaml); here
// the expression is evaluated against the real kube-apiserver, within a test's time.
const apiServiceAlertFor = "20s"

// TestAPIServiceUnavailableAlert: with virt-api scaled to zero, kube-apiserver reports
// Hangar's APIServices unavailable and HangarAPIServiceUnavailable fires in a real Prometheus
// scraping the cluster; KubeVirt's kubevirt_virt_api_up says 0. Once virt-api is back, the
// alert clears. hangar-operator, which would scale virt-api back at once, is stopped meanwhile.
func TestAPIServiceUnavailableAlert(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-alerts")
	waitForDefaultServiceAccount(t, ns)
	reader := serviceAccountToken(t, ns, "prometheus", true)
	prom := startPrometheus(t, reader, 2*time.Second, promOptions{apiServer: true, editRules: func(rules []byte) []byte {
		const alert = "alert: HangarAPIServiceUnavailable"
		i := bytes.Index(rules, []byte(alert))
		require.GreaterOrEqual(t, i, 0)
		j := bytes.Index(rules[i:], []byte("for: 5m"))
		require.GreaterOrEqual(t, j, 0)
		return append(append(append([]byte{}, rules[:i+j]...), "for: "+apiServiceAlertFor...), rules[i+j+len("for: 5m"):]...)
	}})
	require.Eventually(t, func() bool {
		v, ok := prom.value(`max(aggregator_unavailable_apiservice{name="v1.kubevirt.io"})`)
		return ok && v == 0
	}, 60*time.Second, time.Second, "Prometheus scrapes kube-apiserver, which has v1.kubevirt.io available")
	firing := `ALERTS{alertname="HangarAPIServiceUnavailable", alertstate="firing"}`
	r, err := prom.query(firing)
	require.NoError(t, err)
	require.Empty(t, r, "not firing while virt-api serves")

	deployments := kube.AppsV1().Deployments("hangar")
	scaleTo := func(name string, replicas int32) {
		t.Helper()
		s, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		s.Spec.Replicas = replicas
		_, err = deployments.UpdateScale(ctx, name, s, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	replicasOf := func(name string) int32 {
		t.Helper()
		s, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return s.Spec.Replicas
	}
	operatorReplicas, apiReplicas := replicasOf("hangar-operator"), replicasOf("virt-api")
	aggregator := aggregatorclient.NewForConfigOrDie(config)
	available := func() bool {
		s, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, "v1.kubevirt.io", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range s.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				return c.Status == apiregistrationv1.ConditionTrue
			}
		}
		return false
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		scaleTo("virt-api", apiReplicas)
		scaleTo("hangar-operator", operatorReplicas)
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) { return available(), nil })
		require.NoError(t, err, "v1.kubevirt.io is available again")
		waitReady(t, "app.kubernetes.io/name=virt-api", int(apiReplicas))
	}
	t.Cleanup(restore)

	// The operator first: it would put virt-api's replicas back at once.
	scaleTo("hangar-operator", 0)
	require.Eventually(t, func() bool {
		pods, err := kube.CoreV1().Pods("hangar").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=hangar-operator"})
		return err == nil && len(pods.Items) == 0
	}, 2*time.Minute, time.Second, "hangar-operator stopped")
	down := time.Now()
	scaleTo("virt-api", 0)
	require.Eventually(t, func() bool { return !available() }, 2*time.Minute, time.Second, "kube-apiserver marks v1.kubevirt.io unavailable")
	t.Logf("v1.kubevirt.io unavailable %v after virt-api was scaled to zero", time.Since(down).Round(time.Second))

	require.Eventually(t, func() bool {
		r, err := prom.query(firing)
		return err == nil && len(r) > 0
	}, 3*time.Minute, 2*time.Second, "HangarAPIServiceUnavailable fires while virt-api is down")
	r, err = prom.query(firing)
	require.NoError(t, err)
	var names []string
	for _, s := range r {
		names = append(names, s.Metric["name"])
		assert.Equal(t, "critical", s.Metric["severity"])
	}
	assert.Contains(t, names, "v1.kubevirt.io")
	t.Logf("fired %v after virt-api was scaled to zero, for APIServices %v", time.Since(down).Round(time.Second), names)
	up, ok := prom.value("kubevirt_virt_api_up")
	assert.True(t, ok)
	assert.Zero(t, up, "KubeVirt's recording rule sees no virt-api")

	back := time.Now()
	restore()
	require.Eventually(t, func() bool {
		r, err := prom.query(`ALERTS{alertname="HangarAPIServiceUnavailable"}`)
		return err == nil && len(r) == 0
	}, 3*time.Minute, 2*time.Second, "the alert clears once virt-api serves again")
	t.Logf("cleared %v after virt-api was scaled back", time.Since(back).Round(time.Second))
}
