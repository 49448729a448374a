package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCopyPath(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "disk"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(src, "disk", "guest.img"), []byte("QFI\xfbdata"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(src, "disk", "guest.img"), filepath.Join(src, "disk", "link.img")))

	// A sparse file: 4 MiB hole, 1 byte, 4 MiB hole.
	sparse := filepath.Join(src, "sparse.raw")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{1}, 4<<20)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(8<<20))
	require.NoError(t, f.Close())

	// The destination keeps the source's absolute path below it, as the launcher expects.
	require.NoError(t, copyPath(filepath.Join(src, "disk"), underRoot(dst, filepath.Join(src, "disk"))))
	require.NoError(t, copyPath(sparse, underRoot(dst, sparse)))

	for _, name := range []string{"guest.img", "link.img"} {
		p := filepath.Join(dst, src, "disk", name)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		assert.True(t, fi.Mode().IsRegular(), "%s: a link is copied as the file it points to", name)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "%s: readable by the launcher's user", name)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "QFI\xfbdata", string(b))
	}

	fi, err := os.Stat(filepath.Join(dst, sparse))
	require.NoError(t, err)
	assert.Equal(t, int64(8<<20), fi.Size())
	assert.Less(t, fi.Sys().(*syscall.Stat_t).Blocks*512, int64(4<<20), "holes stay holes")
	b, err := os.ReadFile(filepath.Join(dst, sparse))
	require.NoError(t, err)
	assert.Equal(t, byte(1), b[4<<20])

	entries, err := os.ReadDir(filepath.Join(dst, src, "disk"))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary files left behind")
}

func TestUnderRoot(t *testing.T) {
	assert.Equal(t, "/d/boot/vmlinux", underRoot("/d", "/boot/vmlinux"))
	assert.Equal(t, "/d/etc/passwd", underRoot("/d", "../../etc/passwd"))
}

// TestMissingPathIsSkipped: a path the image lacks is no error of the copy (the launcher names
// it in the instance's status); a dangling link the image holds still is.
func TestMissingPathIsSkipped(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	assert.True(t, isMissing(filepath.Join(src, "disk")))
	require.NoError(t, os.Symlink(filepath.Join(src, "nowhere"), filepath.Join(src, "dangling")))
	assert.False(t, isMissing(filepath.Join(src, "dangling")))
	require.Error(t, copyPath(filepath.Join(src, "dangling"), underRoot(dst, "dangling")))
}

// TestCreateImage: an attachment pod makes a sparse image of the claim's size, and never
// touches one that is there.
func TestCreateImage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, createImage(path, 1<<30))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), fi.Size())
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	assert.Less(t, st.Blocks, int64(16), "sparse")

	require.NoError(t, os.WriteFile(path, []byte("the guest's data"), 0o600))
	require.NoError(t, createImage(path, 1<<30))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "the guest's data", string(data))
	assert.ErrorContains(t, hold([]string{path, "-1"}), "not a number of bytes")
}
