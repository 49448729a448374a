package kubeclient

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://192.0.2.1:6443"}
users:
- name: u
  user: {token: secret}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

func TestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(kubeconfig), 0o600))

	tests := []struct {
		name  string
		qps   float32
		burst int
	}{
		{name: "limits given", qps: 200, burst: 400},
		{name: "client-go's limits (zero)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Config(path, tt.qps, tt.burst)
			require.NoError(t, err)
			assert.Equal(t, "https://192.0.2.1:6443", cfg.Host)
			assert.Equal(t, "secret", cfg.BearerToken)
			assert.Equal(t, tt.qps, cfg.QPS)
			assert.Equal(t, tt.burst, cfg.Burst)
			assert.Equal(t, "application/vnd.kubernetes.protobuf", cfg.ContentType)
			assert.Equal(t, "application/vnd.kubernetes.protobuf,application/json", cfg.AcceptContentTypes)
			assert.Empty(t, cfg.UserAgent, "the daemon names itself")
		})
	}
}

func TestConfigErrors(t *testing.T) {
	t.Run("missing kubeconfig", func(t *testing.T) {
		_, err := Config(filepath.Join(t.TempDir(), "none"), 0, 0)
		assert.Error(t, err)
	})
	t.Run("not in a cluster", func(t *testing.T) {
		t.Setenv("KUBERNETES_SERVICE_HOST", "")
		t.Setenv("KUBERNETES_SERVICE_PORT", "")
		_, err := Config("", 0, 0)
		assert.ErrorIs(t, err, rest.ErrNotInCluster)
	})
}
