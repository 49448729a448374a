package virtctl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestExposedService(t *testing.T) {
	tests := []struct {
		name     string
		opts     exposeOptions
		selector map[string]string
		target   intstr.IntOrString
		wantErr  bool
	}{
		{"target defaults to the port", exposeOptions{name: "ssh", port: 22, protocol: "TCP", serviceType: "NodePort"},
			map[string]string{"app": "web"}, intstr.FromInt32(22), false},
		{"explicit target", exposeOptions{name: "web", port: 80, targetPort: 8080, protocol: "TCP", serviceType: "ClusterIP"},
			map[string]string{"app": "web"}, intstr.FromInt32(8080), false},
		{"no labels", exposeOptions{name: "x", port: 1}, nil, intstr.IntOrString{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := exposedService(tc.opts, tc.selector)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.opts.name, svc.Name)
			assert.Equal(t, tc.selector, svc.Spec.Selector)
			assert.Equal(t, corev1.ServiceType(tc.opts.serviceType), svc.Spec.Type)
			require.Len(t, svc.Spec.Ports, 1)
			assert.Equal(t, tc.opts.port, svc.Spec.Ports[0].Port)
			assert.Equal(t, tc.target, svc.Spec.Ports[0].TargetPort)
		})
	}
}
