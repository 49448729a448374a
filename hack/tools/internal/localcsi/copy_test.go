package localcsi

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestCopyRanges: both ways of copying a range give the same bytes at the same offsets.
func TestCopyRanges(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // 4.8 MB: several buffers
	src := filepath.Join(dir, "src")
	require.NoError(t, os.WriteFile(src, content, 0o600))
	in, err := unix.Open(src, unix.O_RDONLY, 0)
	require.NoError(t, err)
	defer unix.Close(in)
	for name, copyFn := range map[string]func(in, out int, from, to int64) error{
		"copy_file_range": copyRange,
		"read and write":  copyRangeByBuffer,
	} {
		t.Run(name, func(t *testing.T) {
			dst := filepath.Join(dir, name)
			out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
			require.NoError(t, err)
			const from, to = 1000, 4_000_123
			require.NoError(t, copyFn(in, out, from, to))
			require.NoError(t, unix.Ftruncate(out, int64(len(content))))
			require.NoError(t, unix.Close(out))
			got, err := os.ReadFile(dst)
			require.NoError(t, err)
			require.Len(t, got, len(content))
			assert.Equal(t, make([]byte, from), got[:from], "nothing before the range")
			assert.True(t, bytes.Equal(content[from:to], got[from:to]), "the range")
			assert.Equal(t, make([]byte, len(content)-to), got[to:], "nothing after it")
		})
	}
}
