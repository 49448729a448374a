// Package monitoring embeds what plugs Hangar into a cluster's monitoring: the Prometheus
// Operator's PodMonitors (podmonitors.yaml) and PrometheusRule (prometheus-rules.yaml: the
// alerts and KubeVirt's recording rules), and the Grafana dashboard (grafana-dashboard.json),
// which Objects wraps in a ConfigMap for Grafana's dashboard sidecar. hangar-operator applies
// them (pkg/operator/render); the files are also for a Prometheus and a Grafana set up by hand.
package monitoring

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var (
	//go:embed podmonitors.yaml
	podMonitors []byte
	//go:embed prometheus-rules.yaml
	rules []byte
	//go:embed grafana-dashboard.json
	dashboard []byte
)

// Group and version of the Prometheus Operator's kinds.
const (
	Group   = "monitoring.coreos.com"
	Version = "v1"
)

// The dashboard's ConfigMap: Grafana's sidecar (kube-prometheus-stack's, the Grafana chart's)
// loads every ConfigMap labelled grafana_dashboard=1, in any namespace it watches.
const (
	DashboardConfigMap  = "hangar-grafana-dashboard"
	DashboardLabel      = "grafana_dashboard"
	DashboardLabelValue = "1"
	DashboardKey        = "hangar-vms.json"
)

// Rules is the PrometheusRule's YAML.
func Rules() []byte { return rules }

// Dashboard is the Grafana dashboard's JSON.
func Dashboard() []byte { return dashboard }

// Objects are the PodMonitors and the PrometheusRule (unstructured: their kinds are another
// project's CustomResourceDefinitions) and the dashboard's ConfigMap, in namespace.
func Objects(namespace string) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, file := range []struct {
		name string
		data []byte
	}{{"podmonitors.yaml", podMonitors}, {"prometheus-rules.yaml", rules}} {
		objs, err := decode(file.data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file.name, err)
		}
		for _, o := range objs {
			o.SetNamespace(namespace)
			out = append(out, o)
		}
	}
	if !json.Valid(dashboard) {
		return nil, errors.New("grafana-dashboard.json is not JSON")
	}
	out = append(out, &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: DashboardConfigMap, Namespace: namespace,
			Labels: map[string]string{DashboardLabel: DashboardLabelValue}},
		Data: map[string]string{DashboardKey: string(dashboard)},
	})
	return out, nil
}

// decode reads the documents of a YAML stream as unstructured objects of the Prometheus
// Operator's group.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var content map[string]any
		if err := yaml.Unmarshal(doc, &content); err != nil {
			return nil, err
		}
		if len(content) == 0 {
			continue // comments only
		}
		u := &unstructured.Unstructured{Object: content}
		if gv := u.GroupVersionKind().GroupVersion(); gv.Group != Group || gv.Version != Version {
			return nil, fmt.Errorf("%s %s: not of %s/%s", u.GetKind(), u.GetName(), Group, Version)
		}
		out = append(out, u)
	}
}
