package api

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// socketPair is a connected pair of unix stream sockets, as handler and launcher hold them.
func socketPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

func openFiles(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestHandover: the descriptors arrive and are the file the sender opened (written through
// the first, read back through the read-only copy).
func TestHandover(t *testing.T) {
	handler, launcher := socketPair(t)
	path := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, os.WriteFile(path, make([]byte, 4096), 0o600))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	ro, err := os.Open(path)
	require.NoError(t, err)
	defer ro.Close()

	sent := Handover{Volume: "hotdisk", Writable: true, ReadOnlyCopy: true}
	require.NoError(t, SendHandover(handler, sent, f, ro))
	h, got, err := ReceiveHandover(launcher)
	require.NoError(t, err)
	require.Len(t, got, 2)
	defer got[0].Close()
	defer got[1].Close()
	assert.Equal(t, sent, h)
	_, err = got[0].WriteAt([]byte("hangar"), 512)
	require.NoError(t, err)
	data := make([]byte, 6)
	_, err = got[1].ReadAt(data, 512)
	require.NoError(t, err)
	assert.Equal(t, "hangar", string(data))
	_, err = got[1].WriteAt([]byte("x"), 0)
	assert.Error(t, err, "the copy is read-only")

	// Without a read-only copy: one descriptor.
	require.NoError(t, SendHandover(handler, Handover{Volume: "hotdisk", Writable: true}, f))
	_, got, err = ReceiveHandover(launcher)
	require.NoError(t, err)
	require.Len(t, got, 1)
	got[0].Close()
}

// TestHandoverRefusals: whatever a peer sends other than one handover with the descriptors it
// says, in the access modes it says, is refused, and every descriptor that came with it is
// closed.
func TestHandoverRefusals(t *testing.T) {
	dir := t.TempDir()
	disk, other := filepath.Join(dir, "disk.img"), filepath.Join(dir, "other.img")
	require.NoError(t, os.WriteFile(disk, nil, 0o600))
	require.NoError(t, os.WriteFile(other, nil, 0o600))
	open := func(path string, flag int) *os.File {
		f, err := os.OpenFile(path, flag, 0)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	null := func() *os.File { return open(os.DevNull, os.O_RDONLY) }
	rw, ro := func() *os.File { return open(disk, os.O_RDWR) }, func() *os.File { return open(disk, os.O_RDONLY) }
	frame := func(body string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	tests := []struct {
		name    string
		msg     []byte
		files   []*os.File
		message string
	}{
		{name: "no descriptor", msg: frame(`{"volume":"hotdisk"}`), message: "one or two descriptors, not 0"},
		{name: "two descriptors, no copy said", msg: frame(`{"volume":"hotdisk"}`), files: []*os.File{null(), null()}, message: "2 descriptors, not 1"},
		{name: "a copy said, one descriptor", msg: frame(`{"volume":"hotdisk","writable":true,"readOnlyCopy":true}`), files: []*os.File{rw()}, message: "1 descriptors, not 2"},
		{name: "many descriptors", msg: frame(`{"volume":"hotdisk"}`), files: []*os.File{null(), null(), null(), null(), null(), null(), null(), null(), null(), null(), null(), null()}, message: "one or two descriptors"},
		{name: "too long", msg: binary.BigEndian.AppendUint32(nil, 1<<20), files: []*os.File{null()}, message: "a handover of 1048576 bytes"},
		{name: "not JSON", msg: frame(`{"volume":`), files: []*os.File{null()}, message: "decode a handover"},
		{name: "a path for a volume name", msg: frame(`{"volume":"../../etc"}`), files: []*os.File{null()}, message: `handover of volume "../../etc"`},
		{name: "trailing bytes", msg: append(frame(`{"volume":"hotdisk"}`), "more"...), files: []*os.File{null()}, message: "more bytes than its length"},
		{name: "writable, read-only descriptor", msg: frame(`{"volume":"hotdisk","writable":true}`), files: []*os.File{ro()}, message: "descriptor 0 has the wrong access mode"},
		{name: "a writable copy", msg: frame(`{"volume":"hotdisk","writable":true,"readOnlyCopy":true}`), files: []*os.File{rw(), rw()}, message: "descriptor 1 has the wrong access mode"},
		{name: "a copy of another file", msg: frame(`{"volume":"hotdisk","writable":true,"readOnlyCopy":true}`), files: []*os.File{rw(), open(other, os.O_RDONLY)}, message: "the read-only copy is another file"},
		{name: "a copy of a read-only disk", msg: frame(`{"volume":"hotdisk","readOnlyCopy":true}`), files: []*os.File{ro(), ro()}, message: "a read-only copy comes only with a writable disk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sender, receiver := socketPair(t)
			var fds []int
			for _, f := range tt.files {
				fds = append(fds, int(f.Fd()))
			}
			before := openFiles(t)
			var oob []byte
			if len(fds) > 0 {
				oob = unix.UnixRights(fds...)
			}
			_, _, err := sender.WriteMsgUnix(tt.msg, oob, nil)
			require.NoError(t, err)
			_, files, err := ReceiveHandover(receiver)
			require.Error(t, err)
			assert.Nil(t, files)
			assert.Contains(t, err.Error(), tt.message)
			assert.Equal(t, before, openFiles(t), "no descriptor kept")
		})
	}
}

func TestSendHandoverChecksTheVolume(t *testing.T) {
	handler, _ := socketPair(t)
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	assert.ErrorContains(t, SendHandover(handler, Handover{Volume: "Not_A_Label"}, f), `handover of volume "Not_A_Label"`)
}
