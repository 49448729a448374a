package podsockets

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// The tests play the tenant: whoever may exec into a launcher container owns everything in
// its socket volume. Each attack is carried out for real against a kubelet-like pods
// directory, and must be refused without the handler's connection reaching anything but a
// process of the pod.

const (
	podA types.UID = "0b7a6c1e-2f4d-4c1b-9a7e-5d3c2b1a0f9e"
	podB types.UID = "5e6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
	vol            = "hangar-sockets"
)

// TestMain doubles as a foreign process: with PODSOCKETS_TEST_LISTEN set, it listens on that
// path and greets each connection with "foreign", as a process outside the pod would (the
// node's container runtime, another tenant's launcher).
func TestMain(m *testing.M) {
	if path := os.Getenv("PODSOCKETS_TEST_LISTEN"); path != "" {
		ln, err := net.Listen("unix", path)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(0)
			}
			_, _ = c.Write([]byte("foreign"))
			c.Close()
		}
	}
	os.Exit(m.Run())
}

// onlyPIDs admits the processes it lists: the test process plays the pod's processes.
type onlyPIDs map[int]bool

func (o onlyPIDs) Verify(pid int, _ types.UID) error {
	if !o[pid] {
		return fmt.Errorf("process %d is not of the pod", pid)
	}
	return nil
}

type world struct {
	t    *testing.T
	pods string // the kubelet's pods directory
	root *Root
}

func newWorld(t *testing.T) *world {
	// Short: sockets bound here must fit in sun_path.
	base, err := os.MkdirTemp("", "ps")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	w := &world{t: t, pods: filepath.Join(base, "p")}
	for _, uid := range []types.UID{podA, podB} {
		require.NoError(t, os.MkdirAll(w.volume(uid), 0o777))
	}
	w.root, err = OpenRoot(w.pods)
	require.NoError(t, err)
	w.root.Peers = onlyPIDs{os.Getpid(): true}
	t.Cleanup(func() { w.root.Close() })
	return w
}

func (w *world) volume(uid types.UID) string {
	return filepath.Join(w.pods, string(uid), "volumes", emptyDirPlugin, vol)
}

// shortPath is a socket path that fits in sun_path; the tests bind there and rename the
// socket into the pods directory (a bound socket answers under its new name).
func (w *world) shortPath() string {
	dir, err := os.MkdirTemp("", "s")
	require.NoError(w.t, err)
	w.t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s")
}

// serve listens on path in the test process (a process of the pod) and greets with hello.
func (w *world) serve(path, hello string) {
	short := w.shortPath()
	ln, err := net.Listen("unix", short)
	require.NoError(w.t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(w.t, os.Rename(short, path))
	w.t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(hello))
			c.Close()
		}
	}()
}

// serveForeign listens on path in another process: not a process of the pod.
func (w *world) serveForeign(path string) {
	exe, err := os.Executable()
	require.NoError(w.t, err)
	cmd := exec.Command(exe)
	short := w.shortPath()
	cmd.Env = append(os.Environ(), "PODSOCKETS_TEST_LISTEN="+short)
	out, err := cmd.StdoutPipe()
	require.NoError(w.t, err)
	require.NoError(w.t, cmd.Start())
	w.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(w.t, err)
	require.Equal(w.t, "ready\n", line)
	require.NoError(w.t, os.Rename(short, path))
}

func (w *world) dir(uid types.UID) *Dir {
	d, err := w.root.Dir(uid, vol)
	require.NoError(w.t, err)
	w.t.Cleanup(func() { d.Close() })
	return d
}

func greeting(t *testing.T, c net.Conn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	b, err := io.ReadAll(c)
	require.NoError(t, err)
	return string(b)
}

func TestDialReachesTheLauncher(t *testing.T) {
	w := newWorld(t)
	w.serve(filepath.Join(w.volume(podA), "launcher.sock"), "launcher A")
	c, err := w.dir(podA).Dial("launcher.sock")
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, os.Getpid(), c.Peer.PID())
	assert.Equal(t, "launcher A", greeting(t, c))
	require.NoError(t, w.dir(podA).Stat("launcher.sock"))
}

func TestAttacksAreRefused(t *testing.T) {
	tests := []struct {
		name string
		// plant makes the tenant's move in pod A's socket volume; it returns the name the
		// handler then dials.
		plant   func(w *world) string
		wantErr error // nil: any error
	}{
		{
			name: "absolute symlink to a socket on the node",
			plant: func(w *world) string {
				host := filepath.Join(w.pods, "..", "host.sock")
				w.serveForeign(host)
				require.NoError(t, os.Symlink(host, filepath.Join(w.volume(podA), "vnc.sock")))
				return "vnc.sock"
			},
			wantErr: unix.ELOOP,
		},
		{
			name: "relative symlink to another tenant's console",
			plant: func(w *world) string {
				w.serve(filepath.Join(w.volume(podB), "console.sock"), "tenant B's root shell")
				target := filepath.Join("..", "..", "..", "..", string(podB), "volumes", emptyDirPlugin, vol, "console.sock")
				require.NoError(t, os.Symlink(target, filepath.Join(w.volume(podA), "console.sock")))
				return "console.sock"
			},
			wantErr: unix.ELOOP,
		},
		{
			name: "symlink through /proc/<pid>/root",
			plant: func(w *world) string {
				require.NoError(t, os.Symlink(fmt.Sprintf("/proc/%d/root/run/containerd/containerd.sock", os.Getpid()), filepath.Join(w.volume(podA), "launcher.sock")))
				return "launcher.sock"
			},
			wantErr: unix.ELOOP,
		},
		{
			name: "hard link to a socket of a process outside the pod",
			plant: func(w *world) string {
				// A hard link needs no access to the target's directory tree from inside the
				// pod in this test, but it stands for any socket inode a tenant could reach.
				host := filepath.Join(w.pods, "..", "host.sock")
				w.serveForeign(host)
				require.NoError(t, os.Link(host, filepath.Join(w.volume(podA), "launcher.sock")))
				return "launcher.sock"
			},
		},
		{
			name: "a socket of the pod's volume served by a process outside the pod",
			plant: func(w *world) string {
				w.serveForeign(filepath.Join(w.volume(podA), "vnc.sock"))
				return "vnc.sock"
			},
		},
		{
			name: "a regular file in place of the socket",
			plant: func(w *world) string {
				require.NoError(t, os.WriteFile(filepath.Join(w.volume(podA), "console.sock"), []byte("x"), 0o644))
				return "console.sock"
			},
			wantErr: ErrNotSocket,
		},
		{
			name: "a FIFO in place of the socket",
			plant: func(w *world) string {
				require.NoError(t, unix.Mkfifo(filepath.Join(w.volume(podA), "console.sock"), 0o644))
				return "console.sock"
			},
			wantErr: ErrNotSocket,
		},
		{
			name: "a directory in place of the socket",
			plant: func(w *world) string {
				require.NoError(t, os.Mkdir(filepath.Join(w.volume(podA), "console.sock"), 0o755))
				return "console.sock"
			},
			wantErr: ErrNotSocket,
		},
		{
			name: "a name that leaves the directory",
			plant: func(w *world) string {
				w.serve(filepath.Join(w.volume(podB), "console.sock"), "tenant B's root shell")
				return "../../../../" + string(podB) + "/volumes/" + emptyDirPlugin + "/" + vol + "/console.sock"
			},
			wantErr: errNotPlainName,
		},
		{
			name:    "dot-dot",
			plant:   func(w *world) string { return ".." },
			wantErr: errNotPlainName,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			name := tt.plant(w)
			c, err := w.dir(podA).Dial(name)
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%q) connected to %s; want a refusal", name, greeting(t, c))
			}
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				// Refused by name and kind: Stat (the handler's poll for the socket) too.
				assert.Error(t, w.dir(podA).Stat(name))
			}
		})
	}
}

// TestSwapBetweenResolveAndConnect replaces the socket with a symlink to another tenant's
// console at the moment after the handler resolved the name: the connection still reaches
// what was resolved, never the swapped-in target.
func TestSwapBetweenResolveAndConnect(t *testing.T) {
	w := newWorld(t)
	path := filepath.Join(w.volume(podA), "console.sock")
	w.serve(path, "console A")
	other := filepath.Join(w.volume(podB), "console.sock")
	w.serve(other, "tenant B's root shell")

	d := w.dir(podA)
	d.afterOpen = func() {
		require.NoError(t, os.Rename(path, path+".old"))
		require.NoError(t, os.Symlink(other, path))
	}
	c, err := d.Dial("console.sock")
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, "console A", greeting(t, c))

	// And the next dial sees the link, and refuses it.
	d.afterOpen = nil
	_, err = d.Dial("console.sock")
	assert.ErrorIs(t, err, unix.ELOOP)
}

// TestVolumeReplacedByALink: the volume directory belongs to the kubelet, but the handler
// does not rely on that either.
func TestVolumeReplacedByALink(t *testing.T) {
	w := newWorld(t)
	w.serve(filepath.Join(w.volume(podB), "launcher.sock"), "launcher B")
	require.NoError(t, os.RemoveAll(w.volume(podA)))
	require.NoError(t, os.Symlink(w.volume(podB), w.volume(podA)))
	_, err := w.root.Dir(podA, vol)
	assert.ErrorIs(t, err, unix.ELOOP)
}

func TestDirRefusesMalformedNames(t *testing.T) {
	w := newWorld(t)
	for _, tt := range []struct {
		uid    types.UID
		volume string
	}{
		{"../" + podB, vol},
		{"not-a-uid", vol},
		{podA, "../" + vol},
		{podA, "Hangar_Sockets"},
		{podA, ""},
	} {
		_, err := w.root.Dir(tt.uid, tt.volume)
		assert.Error(t, err, "%s %s", tt.uid, tt.volume)
	}
}

// TestPeerNetNS: the network namespace is that of the verified process; one that is the
// host's is refused (the test process stands in for a pod's here, so "the host's" is another
// file first, then the test's own namespace).
func TestPeerNetNS(t *testing.T) {
	w := newWorld(t)
	other := filepath.Join(t.TempDir(), "not-the-test-namespace")
	require.NoError(t, os.WriteFile(other, nil, 0o600))
	w.root.HostNetNS = []string{other, "/nonexistent"}
	w.serve(filepath.Join(w.volume(podA), "launcher.sock"), "x")
	c, err := w.dir(podA).Dial("launcher.sock")
	require.NoError(t, err)
	defer c.Close()
	ns, err := c.Peer.NetNS()
	require.NoError(t, err)
	defer ns.Close()
	var got, want unix.Stat_t
	require.NoError(t, unix.Fstat(int(ns.Fd()), &got))
	require.NoError(t, unix.Stat("/proc/self/ns/net", &want))
	assert.Equal(t, want.Ino, got.Ino)

	// A "launcher" in the host's network namespace: a tenant's hostNetwork pod dressed up as
	// one would have the handler build bridges and rules on the node itself.
	w.root.HostNetNS = []string{"/nonexistent", "/proc/self/ns/net"}
	c2, err := w.dir(podA).Dial("launcher.sock")
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Peer.NetNS()
	assert.ErrorContains(t, err, "runs in the host's network namespace")
}

func TestErrNotSocketIsDistinct(t *testing.T) {
	assert.False(t, errors.Is(ErrNotSocket, os.ErrNotExist))
}
