package apply

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

var (
	podMonitor     = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}
	prometheusRule = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}
)

// TestServed: discovery decides which of the Prometheus Operator's kinds the operator writes;
// a cluster without the group serves none, and a discovery that fails is an error, not "none".
func TestServed(t *testing.T) {
	monitoring := func(resources ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: "monitoring.coreos.com/v1"}
		for _, r := range resources {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: r, Namespaced: true})
		}
		return l
	}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		fail      bool
		want      map[schema.GroupVersionKind]bool
		err       string
	}{
		{name: "no Prometheus Operator", resources: []*metav1.APIResourceList{{GroupVersion: "v1"}},
			want: map[schema.GroupVersionKind]bool{podMonitor: false, prometheusRule: false}},
		{name: "its kinds served", resources: []*metav1.APIResourceList{monitoring("podmonitors", "podmonitors/status", "prometheusrules", "servicemonitors")},
			want: map[schema.GroupVersionKind]bool{podMonitor: true, prometheusRule: true}},
		{name: "only some", resources: []*metav1.APIResourceList{monitoring("prometheusrules", "podmonitors/status")},
			want: map[schema.GroupVersionKind]bool{podMonitor: false, prometheusRule: true}},
		{name: "discovery fails", fail: true, err: "discover monitoring.coreos.com/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			d := client.Discovery().(*fakediscovery.FakeDiscovery)
			d.Resources = tt.resources
			if tt.fail {
				d.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("connection refused")
				})
			}
			got, err := Served(d)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestKindsServed: Hangar's own kinds always, in their order; the optional ones when served.
func TestKindsServed(t *testing.T) {
	names := func(kinds []Kind) []string {
		var out []string
		for _, k := range kinds {
			out = append(out, k.Kind)
		}
		return out
	}
	own := names(Kinds[:len(Kinds)-2])
	assert.Equal(t, own, names(KindsServed(Kinds, nil)))
	assert.Equal(t, append(own, "PrometheusRule"), names(KindsServed(Kinds, map[schema.GroupVersionKind]bool{prometheusRule: true})))
	assert.Equal(t, append(own, "PodMonitor", "PrometheusRule"),
		names(KindsServed(Kinds, map[schema.GroupVersionKind]bool{podMonitor: true, prometheusRule: true})))
	assert.Equal(t, []string{"PodMonitor"}, names(KindsServed(Kinds[len(Kinds)-2:], map[schema.GroupVersionKind]bool{podMonitor: true})))
}
