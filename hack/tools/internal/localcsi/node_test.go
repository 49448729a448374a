package localcsi

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func TestNodePublish(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root (CAP_SYS_ADMIN); run the tests as root to cover NodePublishVolume")
	}
	f := newFixture(t, 10*gib)
	vol := f.createVolume(t, volumeRequest("pvc", gib))
	data := f.data(t, vol.VolumeId)
	require.NoError(t, os.WriteFile(filepath.Join(data, "marker"), []byte("hello"), 0o644))
	target := filepath.Join(f.publishDir, "pod-uid", "volumes", "kubernetes.io~csi", "pvc", "mount")
	roTarget := filepath.Join(f.publishDir, "pod-ro", "mount")
	publish := func(target string, readOnly bool) error {
		_, err := f.node.NodePublishVolume(ctx(t), &csi.NodePublishVolumeRequest{VolumeId: vol.VolumeId, TargetPath: target, VolumeCapability: rwo, Readonly: readOnly})
		return err
	}
	unpublish := func(target string) error {
		_, err := f.node.NodeUnpublishVolume(ctx(t), &csi.NodeUnpublishVolumeRequest{VolumeId: vol.VolumeId, TargetPath: target})
		return err
	}
	t.Cleanup(func() { _ = unpublish(target); _ = unpublish(roTarget) })

	require.NoError(t, publish(target, false))
	b, err := os.ReadFile(filepath.Join(target, "marker"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))
	require.NoError(t, os.WriteFile(filepath.Join(target, "from-pod"), []byte("pod"), 0o644))
	assert.FileExists(t, filepath.Join(data, "from-pod"), "the pod writes the volume itself")

	require.NoError(t, publish(target, false), "publishing again is no error")
	requireCode(t, codes.AlreadyExists, publish(target, true))
	mounts, err := mountInfo()
	require.NoError(t, err)
	assert.Contains(t, mounts, target)

	require.NoError(t, publish(roTarget, true))
	err = os.WriteFile(filepath.Join(roTarget, "x"), nil, 0o644)
	require.ErrorIs(t, err, unix.EROFS)
	require.NoError(t, os.WriteFile(filepath.Join(target, "still-writable"), nil, 0o644), "read-only is per mount")

	for _, tt := range []struct{ name, target string }{
		{"relative", "pods/x"},
		{"outside the publish directory", filepath.Join(filepath.Dir(f.publishDir), "elsewhere")},
		{"the publish directory itself", f.publishDir},
		{"escaping with ..", f.publishDir + "/../data"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			requireCode(t, codes.InvalidArgument, publish(tt.target, false))
			requireCode(t, codes.InvalidArgument, unpublish(tt.target))
		})
	}

	require.NoError(t, unpublish(target))
	assert.NoDirExists(t, target)
	assert.FileExists(t, filepath.Join(data, "from-pod"), "unpublishing keeps the data")
	require.NoError(t, unpublish(target), "unpublishing again is no error")
	require.NoError(t, unpublish(roTarget))
	mounts, err = mountInfo()
	require.NoError(t, err)
	assert.NotContains(t, mounts, target)
	assert.NotContains(t, mounts, roTarget)
}

func TestRegistration(t *testing.T) {
	socket := filepath.Join(t.TempDir(), DriverName+"-reg.sock")
	l, err := Listen(socket)
	require.NoError(t, err)
	got := make(chan string, 1)
	srv := NewRegistrationServer("/var/lib/kubelet/plugins/x/csi.sock", func(ok bool, msg string) { got <- fmt.Sprintf("%t %s", ok, msg) })
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := registerapi.NewRegistrationClient(conn)
	info, err := client.GetInfo(ctx(t), &registerapi.InfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, registerapi.CSIPlugin, info.Type)
	assert.Equal(t, DriverName, info.Name)
	assert.Equal(t, "/var/lib/kubelet/plugins/x/csi.sock", info.Endpoint)
	assert.Contains(t, info.SupportedVersions, "1.0.0")
	_, err = client.NotifyRegistrationStatus(ctx(t), &registerapi.RegistrationStatus{PluginRegistered: false, Error: "no"})
	require.NoError(t, err)
	assert.Equal(t, "false no", <-got)

	// A socket left by an earlier run is replaced; anything else is not.
	plain := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(plain, nil, 0o644))
	_, err = Listen(plain)
	require.Error(t, err)
}
