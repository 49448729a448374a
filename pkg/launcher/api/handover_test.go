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

// TestHandover: the descriptor arrives and is the file the sender opened (written through
// it, read back through the path).
func TestHandover(t *testing.T) {
	handler, launcher := socketPair(t)
	path := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, os.WriteFile(path, make([]byte, 4096), 0o600))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()

	require.NoError(t, SendHandover(handler, Handover{Volume: "hotdisk", Writable: true}, f))
	h, got, err := ReceiveHandover(launcher)
	require.NoError(t, err)
	defer got.Close()
	assert.Equal(t, Handover{Volume: "hotdisk", Writable: true}, h)
	_, err = got.WriteAt([]byte("hangar"), 512)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "hangar", string(data[512:518]))
}

// TestHandoverRefusals: whatever a peer sends other than one handover with one descriptor
// is refused, and every descriptor that came with it is closed.
func TestHandoverRefusals(t *testing.T) {
	file := func() *os.File {
		f, err := os.Open(os.DevNull)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	frame := func(body string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	tests := []struct {
		name    string
		msg     []byte
		fds     int
		message string
	}{
		{name: "no descriptor", msg: frame(`{"volume":"hotdisk"}`), message: "exactly one descriptor, not 0"},
		{name: "two descriptors", msg: frame(`{"volume":"hotdisk"}`), fds: 2, message: "exactly one descriptor, not 2"},
		{name: "many descriptors", msg: frame(`{"volume":"hotdisk"}`), fds: 12, message: "exactly one descriptor"},
		{name: "too long", msg: binary.BigEndian.AppendUint32(nil, 1<<20), fds: 1, message: "a handover of 1048576 bytes"},
		{name: "not JSON", msg: frame(`{"volume":`), fds: 1, message: "decode a handover"},
		{name: "a path for a volume name", msg: frame(`{"volume":"../../etc"}`), fds: 1, message: `handover of volume "../../etc"`},
		{name: "trailing bytes", msg: append(frame(`{"volume":"hotdisk"}`), "more"...), fds: 1, message: "more bytes than its length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sender, receiver := socketPair(t)
			var fds []int
			for range tt.fds {
				fds = append(fds, int(file().Fd()))
			}
			before := openFiles(t)
			var oob []byte
			if len(fds) > 0 {
				oob = unix.UnixRights(fds...)
			}
			_, _, err := sender.WriteMsgUnix(tt.msg, oob, nil)
			require.NoError(t, err)
			_, f, err := ReceiveHandover(receiver)
			require.Error(t, err)
			assert.Nil(t, f)
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
