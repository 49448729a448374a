package localcsi

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
	kubeletcsi "k8s.io/kubernetes/pkg/volume/csi"
)

type registration struct {
	name, endpoint string
	versions       []string
}

// kubeletCSIHandler stands for the kubelet's CSI registration handler: the kubelet's own
// validation (CSI versions), and a record of the registration instead of the kubelet's
// CSINode update, which needs an API server.
type kubeletCSIHandler struct{ registered chan registration }

func (h *kubeletCSIHandler) ValidatePlugin(name, endpoint string, versions []string) error {
	return kubeletcsi.PluginHandler.ValidatePlugin(name, endpoint, versions)
}

func (h *kubeletCSIHandler) RegisterPlugin(name, endpoint string, versions []string, _ *time.Duration) error {
	h.registered <- registration{name: name, endpoint: endpoint, versions: versions}
	return nil
}

func (h *kubeletCSIHandler) DeRegisterPlugin(string, string) {}

// TestKubeletFindsTheDriver runs the daemon as hangar-cluster does (Options → Run) and the
// kubelet's own plugin manager (k8s.io/kubernetes v1.34.4) on its registration directory: the
// kubelet finds the socket, accepts the driver and registers it at its CSI endpoint.
func TestKubeletFindsTheDriver(t *testing.T) {
	dir := t.TempDir()
	o := NewOptions()
	o.Node = testNode
	o.DataDir = filepath.Join(dir, "data")
	o.Endpoint = filepath.Join(dir, "plugins", DriverName, "csi.sock")
	o.RegistrationDir = filepath.Join(dir, "plugins_registry")
	o.PublishDir, o.BlockPublishDir = filepath.Join(dir, "pods"), filepath.Join(dir, "devices")
	require.NoError(t, o.Complete())
	require.NoError(t, o.Validate())
	verdict := make(chan bool, 10)
	o.registered = func(ok bool, _ string) { verdict <- ok }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "the driver stops cleanly")
	})

	h := &kubeletCSIHandler{registered: make(chan registration, 10)}
	pm := pluginmanager.NewPluginManager(o.RegistrationDir, record.NewFakeRecorder(100))
	pm.AddHandler(registerapi.CSIPlugin, h)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go pm.Run(config.NewSourcesReady(func(sets.Set[string]) bool { return true }), stop)

	select {
	case r := <-h.registered:
		assert.Equal(t, DriverName, r.name)
		assert.Equal(t, o.Endpoint, r.endpoint, "the kubelet dials the driver's CSI socket")
		assert.Contains(t, r.versions, "1.0.0")
	case <-time.After(60 * time.Second):
		t.Fatal("the kubelet's plugin manager never registered the driver")
	}
	select {
	case ok := <-verdict:
		assert.True(t, ok, "the kubelet tells the driver it is registered")
	case <-time.After(30 * time.Second):
		t.Fatal("the kubelet never told the driver the outcome")
	}
}
