package localcsi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

// writeTree fills a volume with what snapshots must keep: nested directories, modes and
// owners, a sparse file, and links (one pointing out of the volume, which must be copied as a
// link and never followed).
func writeTree(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc", "deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "marker"), []byte("first\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etc", "deep", "secret"), []byte("s3cret"), 0o600))
	require.NoError(t, os.Chmod(filepath.Join(dir, "etc", "deep"), 0o750))
	require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "outside")))
	require.NoError(t, os.Symlink("marker", filepath.Join(dir, "inside")))
	disk, err := os.Create(filepath.Join(dir, "disk.img"))
	require.NoError(t, err)
	_, err = disk.WriteAt([]byte("boot"), 0)
	require.NoError(t, err)
	_, err = disk.WriteAt([]byte("end"), 64<<20-3)
	require.NoError(t, err)
	require.NoError(t, disk.Close())
	if os.Geteuid() == 0 {
		require.NoError(t, os.Lchown(filepath.Join(dir, "etc", "deep", "secret"), 1234, 5678))
		require.NoError(t, os.Lchown(filepath.Join(dir, "outside"), 1234, 5678))
	}
}

func checkTree(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "marker"))
	require.NoError(t, err)
	assert.Equal(t, "first\n", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "etc", "deep", "secret"))
	require.NoError(t, err)
	assert.Equal(t, "s3cret", string(b))
	fi, err := os.Stat(filepath.Join(dir, "etc", "deep", "secret"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dir, "etc", "deep"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	fi, err = os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o777), fi.Mode().Perm(), "the volume's own directory keeps its mode")
	for link, target := range map[string]string{"outside": "/etc/hostname", "inside": "marker"} {
		got, err := os.Readlink(filepath.Join(dir, link))
		require.NoError(t, err, "%s is a link", link)
		assert.Equal(t, target, got)
	}
	var st unix.Stat_t
	require.NoError(t, unix.Stat(filepath.Join(dir, "disk.img"), &st))
	assert.Equal(t, int64(64<<20), st.Size)
	assert.Less(t, st.Blocks*512, int64(1<<20), "the sparse file stays sparse")
	disk, err := os.ReadFile(filepath.Join(dir, "disk.img"))
	require.NoError(t, err)
	assert.Equal(t, "boot", string(disk[:4]))
	assert.Equal(t, "end", string(disk[len(disk)-3:]))
	if os.Geteuid() == 0 {
		for _, p := range []string{filepath.Join("etc", "deep", "secret"), "outside"} {
			require.NoError(t, unix.Lstat(filepath.Join(dir, p), &st))
			assert.Equal(t, [2]uint32{1234, 5678}, [2]uint32{st.Uid, st.Gid}, "owner of %s", p)
		}
	}
}

func TestSnapshotAndRestore(t *testing.T) {
	f := newFixture(t, 20*gib)
	source := f.createVolume(t, volumeRequest("pvc-source", 2*gib))
	srcDir := f.data(t, source.VolumeId)
	writeTree(t, srcDir)

	snap, err := f.controller.CreateSnapshot(ctx(t), &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: source.VolumeId})
	require.NoError(t, err)
	assert.True(t, snap.Snapshot.ReadyToUse)
	assert.Equal(t, 2*gib, snap.Snapshot.SizeBytes, "a snapshot is as large as its volume")
	assert.Equal(t, source.VolumeId, snap.Snapshot.SourceVolumeId)
	assert.WithinDuration(t, time.Now(), snap.Snapshot.CreationTime.AsTime(), time.Minute)

	// Later writes to the source reach neither the snapshot nor what is restored from it.
	require.NoError(t, os.WriteFile(filepath.Join(srcDir, "marker"), []byte("second\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(srcDir, "later"), []byte("later"), 0o644))

	again, err := f.controller.CreateSnapshot(ctx(t), &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: source.VolumeId})
	require.NoError(t, err)
	assert.Equal(t, snap.Snapshot.SnapshotId, again.Snapshot.SnapshotId, "the same name is the same snapshot")
	assert.Equal(t, snap.Snapshot.CreationTime.AsTime(), again.Snapshot.CreationTime.AsTime(), "and is not taken again")

	fromSnapshot := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.Snapshot.SnapshotId}}}
	restoreReq := volumeRequest("pvc-restored", 2*gib)
	restoreReq.VolumeContentSource = fromSnapshot
	restored := f.createVolume(t, restoreReq)
	assert.Equal(t, fromSnapshot.String(), restored.ContentSource.String())
	restoredDir := f.data(t, restored.VolumeId)
	checkTree(t, restoredDir)
	assert.NoFileExists(t, filepath.Join(restoredDir, "later"))

	// The restored volume is a volume of its own: writes do not cross.
	require.NoError(t, os.WriteFile(filepath.Join(restoredDir, "marker"), []byte("restored\n"), 0o644))
	b, err := os.ReadFile(filepath.Join(srcDir, "marker"))
	require.NoError(t, err)
	assert.Equal(t, "second\n", string(b))

	small := volumeRequest("pvc-small", gib)
	small.VolumeContentSource = fromSnapshot
	_, err = f.controller.CreateVolume(ctx(t), small)
	requireCode(t, codes.OutOfRange, err)

	// A clone is a copy of the volume as it is now.
	cloneReq := volumeRequest("pvc-clone", 3*gib)
	cloneReq.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: source.VolumeId}}}
	clone := f.createVolume(t, cloneReq)
	b, err = os.ReadFile(filepath.Join(f.data(t, clone.VolumeId), "later"))
	require.NoError(t, err)
	assert.Equal(t, "later", string(b))

	// The snapshot outlives its volume, and the restored volume outlives the snapshot.
	_, err = f.controller.DeleteVolume(ctx(t), &csi.DeleteVolumeRequest{VolumeId: source.VolumeId})
	require.NoError(t, err)
	restoreReq2 := volumeRequest("pvc-restored-2", 2*gib)
	restoreReq2.VolumeContentSource = fromSnapshot
	checkTree(t, f.data(t, f.createVolume(t, restoreReq2).VolumeId))

	_, err = f.controller.DeleteSnapshot(ctx(t), &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId})
	require.NoError(t, err)
	_, err = f.controller.DeleteSnapshot(ctx(t), &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId})
	require.NoError(t, err, "deleting a deleted snapshot succeeds")
	restoreReq3 := volumeRequest("pvc-restored-3", 2*gib)
	restoreReq3.VolumeContentSource = fromSnapshot
	_, err = f.controller.CreateVolume(ctx(t), restoreReq3)
	requireCode(t, codes.NotFound, err)
	assert.FileExists(t, filepath.Join(restoredDir, "marker"))

	entries, err := os.ReadDir(filepath.Join(f.dataDir, "tmp"))
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing half made is left behind")
}

func TestCreateSnapshotErrors(t *testing.T) {
	f := newFixture(t, 10*gib)
	vol := f.createVolume(t, volumeRequest("pvc", gib))
	other := f.createVolume(t, volumeRequest("pvc-other", gib))
	_, err := f.controller.CreateSnapshot(ctx(t), &csi.CreateSnapshotRequest{Name: "taken", SourceVolumeId: vol.VolumeId})
	require.NoError(t, err)

	tests := []struct {
		name string
		req  *csi.CreateSnapshotRequest
		code codes.Code
	}{
		{name: "no name", req: &csi.CreateSnapshotRequest{SourceVolumeId: vol.VolumeId}, code: codes.InvalidArgument},
		{name: "no source", req: &csi.CreateSnapshotRequest{Name: "s"}, code: codes.InvalidArgument},
		{name: "source is a path", req: &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "../../../etc"}, code: codes.InvalidArgument},
		{name: "source is a snapshot ID", req: &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: newID(SnapshotKind, "x", testNode).String()}, code: codes.InvalidArgument},
		{name: "source with upper-case hex", req: &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: strings.ToUpper(vol.VolumeId[:36]) + vol.VolumeId[36:]}, code: codes.InvalidArgument},
		{name: "source missing", req: &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: newID(VolumeKind, "gone", testNode).String()}, code: codes.NotFound},
		{name: "source on another node", req: &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: newID(VolumeKind, "pvc", "hangar-node-2").String()}, code: codes.FailedPrecondition},
		{name: "name taken by a snapshot of another volume", req: &csi.CreateSnapshotRequest{Name: "taken", SourceVolumeId: other.VolumeId}, code: codes.AlreadyExists},
		{name: "parameters", req: &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: vol.VolumeId, Parameters: map[string]string{"a": "b"}}, code: codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.controller.CreateSnapshot(ctx(t), tt.req)
			requireCode(t, tt.code, err)
		})
	}
}

func TestListSnapshots(t *testing.T) {
	f := newFixture(t, 10*gib)
	a := f.createVolume(t, volumeRequest("a", gib))
	b := f.createVolume(t, volumeRequest("b", gib))
	byVolume := map[string][]string{}
	for i, vol := range []string{a.VolumeId, a.VolumeId, b.VolumeId} {
		resp, err := f.controller.CreateSnapshot(ctx(t), &csi.CreateSnapshotRequest{Name: fmt.Sprint("snap-", i), SourceVolumeId: vol})
		require.NoError(t, err)
		byVolume[vol] = append(byVolume[vol], resp.Snapshot.SnapshotId)
	}
	all := append(append([]string{}, byVolume[a.VolumeId]...), byVolume[b.VolumeId]...)

	ids := func(resp *csi.ListSnapshotsResponse) []string {
		var out []string
		for _, e := range resp.Entries {
			out = append(out, e.Snapshot.SnapshotId)
		}
		return out
	}
	tests := []struct {
		name string
		req  *csi.ListSnapshotsRequest
		want []string
		code codes.Code
	}{
		{name: "all", req: &csi.ListSnapshotsRequest{}, want: all},
		{name: "of a volume", req: &csi.ListSnapshotsRequest{SourceVolumeId: a.VolumeId}, want: byVolume[a.VolumeId]},
		{name: "by ID", req: &csi.ListSnapshotsRequest{SnapshotId: byVolume[b.VolumeId][0]}, want: byVolume[b.VolumeId]},
		{name: "unknown ID", req: &csi.ListSnapshotsRequest{SnapshotId: newID(SnapshotKind, "none", testNode).String()}},
		{name: "an ID that is no ID", req: &csi.ListSnapshotsRequest{SnapshotId: "../x"}},
		{name: "bad token", req: &csi.ListSnapshotsRequest{StartingToken: "x"}, code: codes.Aborted},
		{name: "token with a sign", req: &csi.ListSnapshotsRequest{StartingToken: "+1"}, code: codes.Aborted},
		{name: "token beyond the end", req: &csi.ListSnapshotsRequest{StartingToken: "4"}, code: codes.Aborted},
		{name: "negative max entries", req: &csi.ListSnapshotsRequest{MaxEntries: -1}, code: codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := f.controller.ListSnapshots(ctx(t), tt.req)
			if tt.code != codes.OK {
				requireCode(t, tt.code, err)
				return
			}
			require.NoError(t, err)
			assert.ElementsMatch(t, tt.want, ids(resp))
			assert.Empty(t, resp.NextToken)
		})
	}

	t.Run("pages", func(t *testing.T) {
		var got []string
		token := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 3)
			resp, err := f.controller.ListSnapshots(ctx(t), &csi.ListSnapshotsRequest{MaxEntries: 2, StartingToken: token})
			require.NoError(t, err)
			require.LessOrEqual(t, len(resp.Entries), 2)
			got = append(got, ids(resp)...)
			if token = resp.NextToken; token == "" {
				break
			}
		}
		assert.ElementsMatch(t, all, got)
	})
}
