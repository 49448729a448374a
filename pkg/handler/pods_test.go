package handler

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// testPods is a kubelet pods directory for unit tests. The fake launchers are goroutines of
// the test process, which stands in for every pod: its peer check admits the test's own
// process (the real check, by cgroup, runs in the node tests, where launchers are processes in
// pod cgroups).
type testPods struct {
	dir  string
	root *podsockets.Root
}

type ownProcess struct{}

func (ownProcess) Verify(pid int, _ types.UID) error {
	if pid != os.Getpid() {
		return fmt.Errorf("process %d is not the test", pid)
	}
	return nil
}

func newTestPods(t *testing.T) *testPods {
	dir := filepath.Join(t.TempDir(), "pods")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	root, err := podsockets.OpenRoot(dir)
	require.NoError(t, err)
	root.Peers = ownProcess{}
	t.Cleanup(func() { root.Close() })
	return &testPods{dir: dir, root: root}
}

// testPodUID is the launcher pod UID of the instance scheduledVMI(uid) makes.
func testPodUID(uid string) types.UID {
	return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", []byte(uid)))
}

// listenUnix listens on a unix socket at path, which may be longer than sun_path allows (a
// kubelet pods directory under a temporary directory is): it binds in a short directory and
// renames the socket into place, where connecting to it works as well.
func listenUnix(t *testing.T, path string) net.Listener {
	short, err := os.MkdirTemp("", "s")
	require.NoError(t, err)
	defer os.RemoveAll(short)
	ln, err := net.Listen("unix", filepath.Join(short, "s"))
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, os.Rename(filepath.Join(short, "s"), path))
	return ln
}

// socketDir is the socket volume of vmi's launcher pod on node-a.
func (p *testPods) socketDir(vmi *v1.VirtualMachineInstance) string {
	for uid, node := range vmi.Status.ActivePods {
		if node == "node-a" {
			return filepath.Join(p.dir, string(uid), "volumes", "kubernetes.io~empty-dir", layout.SocketVolume)
		}
	}
	panic("no launcher pod on node-a")
}
