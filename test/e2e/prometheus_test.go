//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/hangarvm/hangar/artifacts/monitoring"
)

// metricsPort is where virt-handler and virt-controller serve /metrics (HTTPS); virtAPIPort
// virt-api's (its API port).
const (
	metricsPort = "8443"
	virtAPIPort = "8443"
)

// serviceAccountToken makes a ServiceAccount in ns and returns a token of it; with reader
// true it may get /metrics (ClusterRole hangar:metrics-reader), as a Prometheus is set up.
func serviceAccountToken(t *testing.T, ns, name string, reader bool) string {
	t.Helper()
	ctx := context.Background()
	_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	if reader {
		binding := "e2e-metrics-" + ns + "-" + name
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding, metav1.DeleteOptions{})
		_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: binding},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "hangar:metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding, metav1.DeleteOptions{})
		})
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// getMetrics GETs https://<pod>:8443/metrics with token (none when empty), as Prometheus
// scrapes: the serving certificate is self-signed.
func getMetrics(podIP, token string) (int, string, error) {
	client := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, as Prometheus is configured
	}}
	req, _ := http.NewRequest(http.MethodGet, "https://"+net.JoinHostPort(podIP, metricsPort)+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// componentPods are the running pods of a Hangar component (app.kubernetes.io/name).
func componentPods(t *testing.T, name string) []corev1.Pod {
	t.Helper()
	pods, err := kube.CoreV1().Pods("hangar").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	require.NoError(t, err)
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	require.NotEmpty(t, out, "running %s pods", name)
	return out
}

// prometheus is Debian's Prometheus server (hack/install-prometheus.sh), run as a plain
// process on the node, scraping every virt-handler and virt-controller pod by its address
// as the README's configuration does (the node reaches pod addresses).
type prometheus struct {
	url string
	cmd *exec.Cmd
	log string
}

// promOptions are what a test's Prometheus scrapes and loads beyond Hangar's pods.
type promOptions struct {
	// apiServer adds the cluster's kube-apiserver (aggregator_unavailable_apiservice).
	apiServer bool
	// editRules changes the rules file before Prometheus loads it.
	editRules func([]byte) []byte
}

// startPrometheus writes a configuration scraping Hangar's pods with token every interval,
// with the rules of artifacts/monitoring loaded, and starts Prometheus on a free loopback port.
func startPrometheus(t *testing.T, token string, interval time.Duration, opts ...promOptions) *prometheus {
	t.Helper()
	var o promOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	bin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "Debian's prometheus: run hack/install-prometheus.sh")
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	rules := rulesFile(t, dir)
	if o.editRules != nil {
		b, err := os.ReadFile(rules)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(rules, o.editRules(b), 0o600))
	}

	// The targets' labels are those the PodMonitors give theirs: namespace and pod (the
	// metrics carry their own namespace and node, the instance's, which honor_labels keeps).
	job := func(name, component, port string) map[string]any {
		var groups []map[string]any
		for _, p := range componentPods(t, component) {
			groups = append(groups, map[string]any{
				"targets": []string{net.JoinHostPort(p.Status.PodIP, port)},
				"labels":  map[string]string{"namespace": p.Namespace, "pod": p.Name},
			})
		}
		return map[string]any{
			"job_name": name, "scheme": "https", "honor_labels": true,
			"tls_config":     map[string]any{"insecure_skip_verify": true},
			"authorization":  map[string]any{"credentials_file": tokenFile},
			"static_configs": groups,
		}
	}
	jobs := []any{job("hangar-virt-handler", "virt-handler", metricsPort), job("hangar-virt-controller", "virt-controller", metricsPort),
		job("hangar-virt-api", "virt-api", virtAPIPort)}
	if o.apiServer {
		server, err := url.Parse(config.Host)
		require.NoError(t, err)
		jobs = append(jobs, map[string]any{
			"job_name": "apiserver", "scheme": "https",
			"tls_config":     map[string]any{"insecure_skip_verify": true},
			"authorization":  map[string]any{"credentials_file": tokenFile},
			"static_configs": []map[string]any{{"targets": []string{server.Host}}},
		})
	}
	promConfig := map[string]any{
		"global": map[string]any{"scrape_interval": interval.String(), "evaluation_interval": interval.String(),
			"scrape_timeout": interval.String()},
		"rule_files":     []string{rules},
		"scrape_configs": jobs,
	}
	b, err := yaml.Marshal(promConfig)
	require.NoError(t, err)
	configFile := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(configFile, b, 0o600))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	p := &prometheus{url: "http://" + addr, log: filepath.Join(dir, "prometheus.log")}
	logFile, err := os.Create(p.log)
	require.NoError(t, err)
	p.cmd = exec.Command(bin, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(p.log)
			if len(out) > 8000 {
				out = out[len(out)-8000:]
			}
			t.Logf("prometheus log (tail):\n%s", out)
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond, "prometheus ready")
	return p
}

// rulesFile writes the groups of artifacts/monitoring/prometheus-rules.yaml (a PrometheusRule)
// as a plain rules file, what Prometheus and promtool read.
func rulesFile(t *testing.T, dir string) string {
	t.Helper()
	var rule struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(monitoring.Rules(), &rule))
	require.Equal(t, "PrometheusRule", rule.Kind)
	b, err := yaml.Marshal(rule.Spec)
	require.NoError(t, err)
	p := filepath.Join(dir, "hangar-rules.yaml")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// sample is one series of a query's answer.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value() float64 {
	var v float64
	str, _ := s.Value[1].(string)
	_, _ = fmt.Sscan(str, &v)
	return v
}

// query runs an instant PromQL query.
func (p *prometheus) query(q string) ([]sample, error) {
	resp, err := http.Get(p.url + "/api/v1/query?" + url.Values{"query": {q}}.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, err
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, answer.Error)
	}
	return answer.Data.Result, nil
}

// value is the single value of q's answer; ok false when there is none.
func (p *prometheus) value(q string) (float64, bool) {
	r, err := p.query(q)
	if err != nil || len(r) != 1 {
		return 0, false
	}
	return r[0].value(), true
}

// ruleHealth maps each loaded rule to its health (ok once evaluated without error).
func (p *prometheus) ruleHealth() (map[string]string, error) {
	resp, err := http.Get(p.url + "/api/v1/rules")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range answer.Data.Groups {
		for _, r := range g.Rules {
			out[r.Name] = strings.TrimSpace(r.Health + " " + r.LastError)
		}
	}
	return out, nil
}

// ruleCount is the number of rules (alerts and recordings) of the PrometheusRule.
func ruleCount(t *testing.T) int {
	t.Helper()
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(monitoring.Rules(), &rule))
	n := 0
	for _, g := range rule.Spec.Groups {
		n += len(g.Rules)
	}
	return n
}
