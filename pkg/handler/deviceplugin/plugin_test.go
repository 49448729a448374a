package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// fakeKubelet is kubelet's registration service on <dir>/kubelet.sock.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	requests chan *pluginapi.RegisterRequest
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.requests <- r
	return &pluginapi.Empty{}, nil
}

func startFakeKubelet(t *testing.T, dir string) *fakeKubelet {
	k := &fakeKubelet{requests: make(chan *pluginapi.RegisterRequest, 4)}
	ln, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	require.NoError(t, err)
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, k)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return k
}

func TestPluginRegistersListsAndAllocates(t *testing.T) {
	dir, err := os.MkdirTemp("", "dp") // short: unix socket paths are limited to 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	device := filepath.Join(dir, "fake-kvm")
	require.NoError(t, os.WriteFile(device, nil, 0o600))
	kubelet := startFakeKubelet(t, dir)

	p := &Plugin{Resource: "devices.kubevirt.io/kvm", DevicePath: device, Slots: 3, PluginDir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	var req *pluginapi.RegisterRequest
	select {
	case req = <-kubelet.requests:
	case <-time.After(10 * time.Second):
		t.Fatal("no registration")
	}
	assert.Equal(t, pluginapi.Version, req.Version)
	assert.Equal(t, "devices.kubevirt.io/kvm", req.ResourceName)
	assert.Equal(t, "hangar-kvm.sock", req.Endpoint)

	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, req.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := pluginapi.NewDevicePluginClient(conn)
	stream, err := client.ListAndWatch(ctx, &pluginapi.Empty{})
	require.NoError(t, err)
	list, err := stream.Recv()
	require.NoError(t, err)
	require.Len(t, list.Devices, 3)
	assert.Equal(t, "kvm0", list.Devices[0].ID)
	assert.Equal(t, pluginapi.Healthy, list.Devices[0].Health)

	resp, err := client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"kvm1"}}}})
	require.NoError(t, err)
	require.Len(t, resp.ContainerResponses, 1)
	assert.Equal(t, []*pluginapi.DeviceSpec{{HostPath: device, ContainerPath: device, Permissions: "rw"}}, resp.ContainerResponses[0].Devices)

	// kubelet restarts: it removes plugin sockets; the plugin serves and registers again.
	require.NoError(t, os.Remove(filepath.Join(dir, req.Endpoint)))
	select {
	case req = <-kubelet.requests:
		assert.Equal(t, "devices.kubevirt.io/kvm", req.ResourceName)
	case <-time.After(10 * time.Second):
		t.Fatal("no registration after the socket was removed")
	}

	cancel()
	require.NoError(t, <-done)
	_, err = os.Stat(filepath.Join(dir, req.Endpoint))
	assert.True(t, os.IsNotExist(err), "socket removed on exit")
}
