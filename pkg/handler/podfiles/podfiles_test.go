package podfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// ownProcess plays the attachment pod: this test's own process is pod "pod-1".
type ownProcess struct{}

func (ownProcess) Verify(pid int, podUID types.UID) error {
	if pid == os.Getpid() && podUID == "pod-1" {
		return nil
	}
	return fmt.Errorf("process %d is not of pod %s", pid, podUID)
}

// TestOpen: what a tenant can put at the path in their attachment pod's volume, and whether
// the handler opens it. The test's process is the pod's, its root the real one.
func TestOpen(t *testing.T) {
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	o := Opener{Peers: ownProcess{}, UID: uid, GID: gid}
	secret := filepath.Join(t.TempDir(), "node-secret")
	require.NoError(t, os.WriteFile(secret, []byte("the node's"), 0o600))

	tests := []struct {
		name    string
		setup   func(t *testing.T, volume string) // makes volume/disk.img
		pod     types.UID
		path    string // below the volume; disk.img when empty
		refused string // "" when opened
	}{
		{name: "the claim's disk image", setup: func(t *testing.T, v string) { writeFile(t, filepath.Join(v, "disk.img"), 0o660) }},
		{name: "a link to a node file: the link itself, no file", setup: func(t *testing.T, v string) { require.NoError(t, os.Symlink(secret, filepath.Join(v, "disk.img"))) },
			refused: "not a regular file (mode 0120000)"},
		{name: "a link to a directory on the way", setup: func(t *testing.T, v string) {
			require.NoError(t, os.Symlink(filepath.Dir(secret), filepath.Join(v, "dir")))
		}, path: "dir/node-secret", refused: "too many levels of symbolic links"},
		{name: "a relative link", setup: func(t *testing.T, v string) {
			require.NoError(t, os.Symlink("../../../../etc/passwd", filepath.Join(v, "disk.img")))
		}, refused: "not a regular file (mode 0120000)"},
		{name: "a /proc magic link", setup: func(t *testing.T, v string) {
			require.NoError(t, os.Symlink("/proc/self/root/etc/passwd", filepath.Join(v, "disk.img")))
		}, refused: "not a regular file (mode 0120000)"},
		{name: "a directory", setup: func(t *testing.T, v string) { require.NoError(t, os.Mkdir(filepath.Join(v, "disk.img"), 0o755)) },
			refused: "not a regular file"},
		{name: "a FIFO is refused without blocking", setup: func(t *testing.T, v string) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(v, "disk.img"), 0o666))
		}, refused: "not a regular file"},
		{name: "a file the pod's user may not write", setup: func(t *testing.T, v string) { writeFile(t, filepath.Join(v, "disk.img"), 0o400) },
			refused: "may not read and write it"},
		{name: "a file of another process's pod", setup: func(t *testing.T, v string) { writeFile(t, filepath.Join(v, "disk.img"), 0o600) },
			pod: "pod-2", refused: "is not of pod pod-2"},
		{name: "missing", setup: func(*testing.T, string) {}, refused: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			volume := t.TempDir()
			tt.setup(t, volume)
			pod := tt.pod
			if pod == "" {
				pod = "pod-1"
			}
			path := tt.path
			if path == "" {
				path = "disk.img"
			}
			// Relative to the process's root, as the attachment pod's mount is.
			rel := strings.TrimPrefix(filepath.Join(volume, path), "/")
			f, err := o.Open(os.Getpid(), pod, rel, RegularFile)
			if tt.refused == "" {
				require.NoError(t, err)
				defer f.Close()
				_, err = f.WriteAt([]byte("hangar"), 0)
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Nil(t, f)
			assert.True(t, errors.Is(err, ErrRefused), "a refusal: %v", err)
			assert.Contains(t, err.Error(), tt.refused)
		})
	}
	_, err := o.Open(os.Getpid(), "pod-1", "/etc/passwd", RegularFile)
	assert.ErrorIs(t, err, ErrRefused, "an absolute path")
	_, err = o.Open(os.Getpid(), "pod-1", "../etc/passwd", RegularFile)
	assert.ErrorIs(t, err, ErrRefused, "a path out of the root")
}

func writeFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, make([]byte, 4096), 0o600))
	require.NoError(t, os.Chmod(path, mode))
}

// TestReadOnlyCopy: the copy (api.ReadOnlyCopy, as virt-handler makes it) is the file Open
// checked, even once the pod has put another file at its path, and it cannot write.
func TestReadOnlyCopy(t *testing.T) {
	o := Opener{Peers: ownProcess{}, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	volume := t.TempDir()
	disk := filepath.Join(volume, "disk.img")
	writeFile(t, disk, 0o600)
	f, err := o.Open(os.Getpid(), "pod-1", strings.TrimPrefix(disk, "/"), RegularFile)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("checked"), 0)
	require.NoError(t, err)
	require.NoError(t, os.Rename(disk, disk+".old"))
	require.NoError(t, os.Symlink("/etc/passwd", disk))

	ro, err := api.ReadOnlyCopy(f)
	require.NoError(t, err)
	defer ro.Close()
	data := make([]byte, 7)
	_, err = ro.ReadAt(data, 0)
	require.NoError(t, err)
	assert.Equal(t, "checked", string(data))
	_, err = ro.WriteAt([]byte("x"), 0)
	assert.Error(t, err)
}
