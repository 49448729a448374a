package launcher

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// relayFixture is a relay whose serial side is the test (playing QEMU).
func relayFixture(t *testing.T) (*consoleRelay, net.Conn, string, string) {
	dir, err := os.MkdirTemp("", "relay") // short: unix socket paths
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	serialPath := filepath.Join(dir, "serial.sock")
	ln, err := net.Listen("unix", serialPath)
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	serial, err := dialSerial(serialPath, time.Second)
	require.NoError(t, err)
	qemu := <-accepted
	t.Cleanup(func() { qemu.Close() })
	logPath := filepath.Join(dir, "console.log")
	r, err := startConsoleRelay(serial, filepath.Join(dir, "console.sock"), logPath)
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r, qemu, filepath.Join(dir, "console.sock"), logPath
}

func dialRelay(t *testing.T, path string, r *consoleRelay) net.Conn {
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.client != nil && r.client.conn.RemoteAddr() != nil && r.client.conn.LocalAddr().String() == c.RemoteAddr().String()
	}, 2*time.Second, 5*time.Millisecond)
	return c
}

func TestConsoleRelayBothWaysAndNewestClientWins(t *testing.T) {
	r, qemu, sock, logPath := relayFixture(t)
	_, err := qemu.Write([]byte("before any client\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the relay has read it, with no client yet
		b, _ := os.ReadFile(logPath)
		return string(b) == "before any client\n"
	}, 2*time.Second, 5*time.Millisecond)

	first := dialRelay(t, sock, r)
	_, err = qemu.Write([]byte("hello\n"))
	require.NoError(t, err)
	buf := make([]byte, 64)
	require.NoError(t, first.SetReadDeadline(time.Now().Add(2*time.Second)))
	n, err := first.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(buf[:n]), "only what the guest printed while connected")

	_, err = first.Write([]byte("ls\n"))
	require.NoError(t, err)
	require.NoError(t, qemu.SetReadDeadline(time.Now().Add(2*time.Second)))
	n, err = qemu.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "ls\n", string(buf[:n]))

	second := dialRelay(t, sock, r)
	_, err = first.Read(buf)
	assert.ErrorIs(t, err, io.EOF, "the older client is closed")
	_, err = qemu.Write([]byte("to the second\n"))
	require.NoError(t, err)
	require.NoError(t, second.SetReadDeadline(time.Now().Add(2*time.Second)))
	n, err = second.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "to the second\n", string(buf[:n]))

	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return string(b) == "before any client\nhello\nto the second\n"
	}, 2*time.Second, 10*time.Millisecond)
}

// A client that does not read for a while loses nothing: the guest's many small writes are
// queued and written in large pieces.
func TestConsoleRelaySlowClientGetsEverything(t *testing.T) {
	r, qemu, sock, _ := relayFixture(t)
	c := dialRelay(t, sock, r)
	var want bytes.Buffer
	for i := range 5000 {
		line := []byte(strings.Repeat("x", i%7) + "\n")
		want.Write(line)
		_, err := qemu.Write(line)
		require.NoError(t, err)
	}
	time.Sleep(200 * time.Millisecond) // the client is busy elsewhere
	got := make([]byte, want.Len())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(got))
}

func TestConsoleLogRotates(t *testing.T) {
	r, qemu, _, logPath := relayFixture(t)
	chunk := bytes.Repeat([]byte("y"), 64<<10)
	for range (maxLog / len(chunk)) + 2 {
		_, err := qemu.Write(chunk)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		old, err1 := os.Stat(logPath + ".1")
		cur, err2 := os.Stat(logPath)
		return err1 == nil && err2 == nil && old.Size()+cur.Size() == int64(maxLog/len(chunk)+2)*int64(len(chunk))
	}, 5*time.Second, 10*time.Millisecond)
	_ = r
}
