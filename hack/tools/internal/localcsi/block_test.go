package localcsi

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

func blockRequest(name string, bytes int64, source *csi.VolumeContentSource) *csi.CreateVolumeRequest {
	req := volumeRequest(name, bytes)
	req.VolumeCapabilities = []*csi.VolumeCapability{blockCap}
	req.VolumeContentSource = source
	return req
}

// TestBlockVolumeFiles: a Block volume is a sparse file of its size; snapshots and restores copy
// it, a larger restore grows it, and modes never mix.
func TestBlockVolumeFiles(t *testing.T) {
	f := newFixture(t, 10*gib)
	vol := f.createVolume(t, blockRequest("blk", 64<<20, nil))
	disk := filepath.Join(f.data(t, vol.VolumeId), blockFile)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(disk, &st))
	assert.Equal(t, int64(64<<20), st.Size)
	assert.Zero(t, st.Blocks, "a new disk is all holes")

	_, err := f.controller.CreateVolume(ctx(t), volumeRequest("blk", 64<<20))
	requireCode(t, codes.AlreadyExists, err)

	writeAt(t, disk, 1<<20, "before")
	snap, err := f.controller.CreateSnapshot(ctx(t), &csi.CreateSnapshotRequest{Name: "blk-snap", SourceVolumeId: vol.VolumeId})
	require.NoError(t, err)
	writeAt(t, disk, 1<<20, "after!")

	source := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.Snapshot.SnapshotId}}}
	restored := f.createVolume(t, blockRequest("blk-restored", 128<<20, source))
	restoredDisk := filepath.Join(f.data(t, restored.VolumeId), blockFile)
	require.NoError(t, unix.Stat(restoredDisk, &st))
	assert.Equal(t, int64(128<<20), st.Size, "a larger restore is a larger disk")
	assert.Equal(t, "before", readAt(t, restoredDisk, 1<<20, 6))

	asFilesystem := volumeRequest("fs-from-blk", 128<<20)
	asFilesystem.VolumeContentSource = source
	_, err = f.controller.CreateVolume(ctx(t), asFilesystem)
	requireCode(t, codes.InvalidArgument, err)

	fs := f.createVolume(t, volumeRequest("fs", gib))
	_, err = f.controller.CreateVolume(ctx(t), blockRequest("blk-from-fs", gib,
		&csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: fs.VolumeId}}}))
	requireCode(t, codes.InvalidArgument, err)

	v, err := f.controller.ValidateVolumeCapabilities(ctx(t), &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol.VolumeId, VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	require.NoError(t, err)
	assert.Nil(t, v.Confirmed, "a block volume is no file system")
	v, err = f.controller.ValidateVolumeCapabilities(ctx(t), &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol.VolumeId, VolumeCapabilities: []*csi.VolumeCapability{blockCap}})
	require.NoError(t, err)
	assert.NotNil(t, v.Confirmed)
}

// TestBlockPublish: a Block volume reaches the pod as its loop device, bound onto the target
// file; writes through it land in the volume's file; deleting the volume detaches the device.
func TestBlockPublish(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop devices and bind mounts need root; run the tests as root to cover block publishing")
	}
	f := newFixture(t, 10*gib)
	vol := f.createVolume(t, blockRequest("blk", 64<<20, nil))
	disk := filepath.Join(f.data(t, vol.VolumeId), blockFile)
	t.Cleanup(func() { _ = detachLoop(disk) })
	target := filepath.Join(f.blockPublishDir, "publish", "pv", "pod-uid")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
	publish := func(target string, cap *csi.VolumeCapability, readOnly bool) error {
		// As the kubelet calls it for a block volume: with a staging path, though the driver
		// does not stage.
		_, err := f.node.NodePublishVolume(ctx(t), &csi.NodePublishVolumeRequest{VolumeId: vol.VolumeId, TargetPath: target, VolumeCapability: cap, Readonly: readOnly,
			StagingTargetPath: filepath.Join(f.blockPublishDir, "staging", "pv")})
		return err
	}
	unpublish := func(target string) error {
		_, err := f.node.NodeUnpublishVolume(ctx(t), &csi.NodeUnpublishVolumeRequest{VolumeId: vol.VolumeId, TargetPath: target})
		return err
	}
	t.Cleanup(func() { _ = unpublish(target) })

	requireCode(t, codes.InvalidArgument, publish(filepath.Join(f.publishDir, "pod", "mount"), rwo, false))
	requireCode(t, codes.InvalidArgument, publish(filepath.Join(f.publishDir, "pod", "dev"), blockCap, false)) // block targets live in the block directory

	require.NoError(t, publish(target, blockCap, false))
	require.NoError(t, publish(target, blockCap, false), "publishing again is no error")
	var st unix.Stat_t
	require.NoError(t, unix.Stat(target, &st))
	assert.Equal(t, uint32(unix.S_IFBLK), st.Mode&unix.S_IFMT, "the target is the device")
	devs, err := loopDevices(disk)
	require.NoError(t, err)
	require.Len(t, devs, 1)

	dev, err := os.OpenFile(target, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = dev.WriteAt([]byte("through the device"), 4096)
	require.NoError(t, err)
	require.NoError(t, dev.Sync())
	require.NoError(t, dev.Close())
	assert.Equal(t, "through the device", readAt(t, disk, 4096, 18))

	roTarget := filepath.Join(f.blockPublishDir, "publish", "pv", "pod-ro")
	t.Cleanup(func() { _ = unpublish(roTarget) })
	require.NoError(t, publish(roTarget, blockCap, true))
	// The kernel may let a read-only device open for writing; it refuses the write.
	if w, err := os.OpenFile(roTarget, os.O_RDWR, 0); err == nil {
		_, err = w.WriteAt([]byte("never"), 4096)
		w.Close()
		assert.True(t, errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS), "a write to a read-only block volume: %v", err)
	} else {
		assert.True(t, errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES), "%v", err)
	}
	assert.Equal(t, "through the device", readAt(t, roTarget, 4096, 18), "it reads")
	require.NoError(t, publish(filepath.Join(f.blockPublishDir, "publish", "pv", "pod-3"), blockCap, false))
	t.Cleanup(func() { _ = unpublish(filepath.Join(f.blockPublishDir, "publish", "pv", "pod-3")) })
	devs, err = loopDevices(disk)
	require.NoError(t, err)
	assert.Len(t, devs, 2, "one read-write and one read-only loop device per volume, however often it is published")

	require.NoError(t, unpublish(target))
	require.NoError(t, unpublish(roTarget))
	require.NoError(t, unpublish(filepath.Join(f.blockPublishDir, "publish", "pv", "pod-3")))
	assert.NoFileExists(t, target)
	_, err = f.controller.DeleteVolume(ctx(t), &csi.DeleteVolumeRequest{VolumeId: vol.VolumeId})
	require.NoError(t, err)
	devs, err = loopDevices(disk)
	require.NoError(t, err)
	assert.Empty(t, devs, "deleting the volume detaches its loop device")
}

func writeAt(t *testing.T, file string, off int64, s string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte(s), off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func readAt(t *testing.T, file string, off int64, n int) string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, off)
	require.NoError(t, err)
	return string(b)
}
