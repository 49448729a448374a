package monitoring_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/hangarvm/hangar/artifacts/monitoring"
	"github.com/hangarvm/hangar/pkg/operator/render"
)

// RequirePromtoolEnv, when set (hack/test.sh sets it), turns a missing promtool from a skip into
// a failure.
const RequirePromtoolEnv = "HANGAR_REQUIRE_PROMTOOL"

const runbookBase = "https://github.com/hangarvm/hangar/blob/main/docs/runbooks/"

// rule is a Prometheus rule; decoding strictly into it catches a misspelt field.
type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ruleSpec struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

func spec(t *testing.T) ruleSpec {
	t.Helper()
	var r struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Spec       ruleSpec          `json:"spec"`
	}
	require.NoError(t, yaml.UnmarshalStrict(monitoring.Rules(), &r))
	require.Equal(t, "PrometheusRule", r.Kind)
	return r.Spec
}

// TestAlertsHaveRunbooks: every alert has a severity, a summary, a description and a
// runbook_url to its runbook in docs/runbooks, and every runbook there is an alert's.
func TestAlertsHaveRunbooks(t *testing.T) {
	runbooks, err := filepath.Glob("../../docs/runbooks/*.md")
	require.NoError(t, err)
	var alerts []string
	for _, g := range spec(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			assert.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], r.Alert)
			assert.NotEmpty(t, r.Annotations["summary"], r.Alert)
			assert.NotEmpty(t, r.Annotations["description"], r.Alert)
			assert.Equal(t, runbookBase+r.Alert+".md", r.Annotations["runbook_url"], r.Alert)
			body, err := os.ReadFile(filepath.Join("../../docs/runbooks", r.Alert+".md"))
			if assert.NoError(t, err, "the runbook of %s", r.Alert) {
				assert.True(t, strings.HasPrefix(string(body), "# "+r.Alert+"\n"), "%s.md starts with its title", r.Alert)
			}
		}
	}
	assert.Len(t, alerts, 10)
	for _, rb := range runbooks {
		assert.Contains(t, alerts, strings.TrimSuffix(filepath.Base(rb), ".md"), "a runbook of no alert")
	}
}

// TestPodMonitorsFindTheComponents: each PodMonitor selects the pods of its component (the
// labels of the manifests the operator deploys) at a port those pods have, with the token and
// CA Secrets the installation makes.
func TestPodMonitorsFindTheComponents(t *testing.T) {
	objs, err := monitoring.Objects("hangar")
	require.NoError(t, err)
	pods := componentPods(t)
	monitors := map[string]bool{}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GetKind() != "PodMonitor" {
			continue
		}
		monitors[u.GetName()] = true
		assert.Equal(t, "hangar", u.GetNamespace())
		selector, _, err := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
		require.NoError(t, err)
		var matched []corev1.PodTemplateSpec
		for _, p := range pods {
			if labels.SelectorFromSet(selector).Matches(labels.Set(p.Labels)) {
				matched = append(matched, p)
			}
		}
		require.Len(t, matched, 1, "%s selects one component's pods", u.GetName())
		assert.Equal(t, u.GetName(), matched[0].Labels["app.kubernetes.io/name"])
		endpoints, _, err := unstructured.NestedSlice(u.Object, "spec", "podMetricsEndpoints")
		require.NoError(t, err)
		require.Len(t, endpoints, 1)
		ep := endpoints[0].(map[string]any)
		var ports []string
		for _, c := range matched[0].Spec.Containers {
			for _, p := range c.Ports {
				ports = append(ports, p.Name)
			}
		}
		assert.Contains(t, ports, ep["port"], "%s scrapes a port its pods have", u.GetName())
		assert.Equal(t, "https", ep["scheme"])
		secret, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")
		assert.Equal(t, "hangar-metrics-reader-token", secret)
	}
	assert.Equal(t, map[string]bool{"virt-api": true, "virt-controller": true, "virt-handler": true}, monitors)
}

// componentPods are the pod templates of the component manifests.
func componentPods(t *testing.T) []corev1.PodTemplateSpec {
	t.Helper()
	objs, err := render.Objects(render.Settings{Version: "v0", Images: render.Images{VirtAPI: "a", VirtController: "c",
		VirtHandler: "h", VirtLauncher: "l", Etcd: "e"}})
	require.NoError(t, err)
	var out []corev1.PodTemplateSpec
	for _, o := range objs {
		switch w := o.Object.(type) {
		case *appsv1.Deployment:
			out = append(out, w.Spec.Template)
		case *appsv1.DaemonSet:
			out = append(out, w.Spec.Template)
		case *appsv1.StatefulSet:
			out = append(out, w.Spec.Template)
		}
	}
	return out
}

// TestDashboardConfigMap: the dashboard, labelled for Grafana's sidecar, as JSON Grafana reads.
func TestDashboardConfigMap(t *testing.T) {
	objs, err := monitoring.Objects("hangar")
	require.NoError(t, err)
	i := slices.IndexFunc(objs, func(o runtime.Object) bool { _, ok := o.(*corev1.ConfigMap); return ok })
	require.GreaterOrEqual(t, i, 0)
	cm := objs[i].(*corev1.ConfigMap)
	assert.Equal(t, map[string]string{"grafana_dashboard": "1"}, cm.Labels)
	var dash struct {
		UID    string           `json:"uid"`
		Title  string           `json:"title"`
		Panels []map[string]any `json:"panels"`
	}
	require.NoError(t, json.Unmarshal([]byte(cm.Data[monitoring.DashboardKey]), &dash))
	assert.Equal(t, "hangar-vms", dash.UID)
	assert.NotEmpty(t, dash.Panels)
}

// promtool is Debian's (hack/install-prometheus.sh): skipped without it, unless required.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv(RequirePromtoolEnv) != "" {
			t.Fatalf("no promtool: install Debian's prometheus (hack/install-prometheus.sh)")
		}
		t.Skip("no promtool: install Debian's prometheus (hack/install-prometheus.sh) to run this test")
	}
	return path
}

// rulesFile writes the PrometheusRule's groups as a plain rules file.
func rulesFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := yaml.Marshal(spec(t))
	require.NoError(t, err)
	path := filepath.Join(dir, "hangar-rules.yaml")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// TestRulesWithPromtool: promtool accepts the rules, and its unit tests (rules-test.yaml) pass:
// each alert fires on its condition and not before its `for`, KubeVirt's recording rules
// record what KubeVirt's alerts read.
func TestRulesWithPromtool(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	rules := rulesFile(t, dir)
	out, err := exec.Command(bin, "check", "rules", rules).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "SUCCESS")

	tests, err := fs.ReadFile(os.DirFS("."), "rules-test.yaml")
	require.NoError(t, err)
	testsFile := filepath.Join(dir, "rules-test.yaml")
	require.NoError(t, os.WriteFile(testsFile, []byte(strings.ReplaceAll(string(tests), "RULES_FILE", rules)), 0o600))
	out, err = exec.Command(bin, "test", "rules", testsFile).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "SUCCESS")
}

// TestEveryRuleTested: rules-test.yaml makes every alert fire at least once and reads every
// recording rule, itself or through the rule that records it under KubeVirt's other name, so a
// rule added without a promtool test fails here.
func TestEveryRuleTested(t *testing.T) {
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
			PromqlExprTest []struct {
				Expr string `json:"expr"`
			} `json:"promql_expr_test"`
		} `json:"tests"`
	}
	data, err := os.ReadFile("rules-test.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &tests))
	fired := map[string]bool{}
	var exprs []string
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
		for _, e := range tc.PromqlExprTest {
			exprs = append(exprs, e.Expr)
		}
	}
	read := func(name string) bool {
		return slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, name) })
	}
	for _, g := range spec(t).Groups {
		for _, r := range g.Rules {
			switch {
			case r.Alert != "":
				assert.True(t, fired[r.Alert], "rules-test.yaml has no case where %s fires", r.Alert)
			case read(r.Record):
			default:
				// Recorded again under another name (KubeVirt's older one), which a test reads.
				aliased := false
				for _, g := range spec(t).Groups {
					for _, other := range g.Rules {
						aliased = aliased || (other.Record != "" && strings.TrimSpace(other.Expr) == r.Record && read(other.Record))
					}
				}
				assert.True(t, aliased, "rules-test.yaml reads %s neither itself nor through an alias", r.Record)
			}
		}
	}
}
