//go:build libvirt

package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// The node tests run each virt-launcher as its pod would run it, without a kubelet:
//   - as the unprivileged user 107 with no capabilities and no_new_privs (setpriv), in a mount
//     namespace of its own where /etc/passwd knows that user and /dev/net/tun belongs to it
//     (what the launcher image and containerd's device_ownership_from_security_context give),
//     with an empty directory of its own at /dev/fdset (the pod's volume there);
//   - in a cgroup named pod<UID>, as the kubelet names pod cgroups, so virt-handler's check of
//     socket peers (podsockets.ProcPeers) runs for real;
//   - with its socket directory in an emptyDir-like directory of a kubelet-like pods directory
//     (<pods>/<UID>/volumes/kubernetes.io~empty-dir/hangar-sockets), bind-mounted where the
//     launcher expects it, as the container runtime mounts the volume.
// The tests reach the launcher as virt-handler does: through podsockets, never by a path.

// node is the emulated node: its pods directory and what every launcher's mount namespace gets.
type node struct {
	base     string // short: unix socket paths below it must fit in sun_path
	podsDir  string
	pods     *podsockets.Root
	passwd   string
	group    string
	tun      string
	cgroups  string // the cgroup hierarchy the tests put launchers in
	launcher string
}

var (
	nodeOnce sync.Once
	nodeVal  *node
	nodeErr  error
)

// TestMain removes what the emulated node left on the host: the cgroup parent of the
// launchers (each launcher's own cgroup goes with its test) and the node's directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if nodeVal != nil {
		_ = os.Remove(nodeVal.cgroups)
		_ = os.RemoveAll(nodeVal.base)
	}
	os.Exit(code)
}

// testNode prepares the emulated node once per test binary.
func testNode(t *testing.T) *node {
	t.Helper()
	env := testEnv(t)
	nodeOnce.Do(func() { nodeVal, nodeErr = newNode(env) })
	require.NoError(t, nodeErr)
	return nodeVal
}

// runID names what this run of the tests leaves on the host (network namespaces, the
// node's directory), so hack/test-node.sh can tell its leftovers from another run's.
var runID = func() string {
	if id := os.Getenv("HANGAR_NODE_TEST_RUN"); id != "" {
		return id
	}
	return fmt.Sprintf("%d", os.Getpid())
}()

// launcherDir is a directory the launcher's user may read, removed when t ends (t.TempDir
// is root's alone).
func launcherDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(testNode(t).base, "d")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	require.NoError(t, os.Chmod(d, 0o755))
	return d
}

func newNode(env env) (*node, error) {
	// No random suffix: socket paths below it are near sun_path's limit, and runID is unique.
	base := filepath.Join(os.TempDir(), "hn"+runID)
	if err := os.Mkdir(base, 0o700); err != nil {
		return nil, err
	}
	// The launcher (user 107) must traverse it; the temporary directory is root's alone.
	if err := os.Chmod(base, 0o755); err != nil {
		return nil, err
	}
	n := &node{base: base, podsDir: filepath.Join(base, "pods"), launcher: env.launcher}
	if err := os.Mkdir(n.podsDir, 0o755); err != nil {
		return nil, err
	}
	pods, err := podsockets.OpenRoot(n.podsDir)
	if err != nil {
		return nil, err
	}
	n.pods = pods
	// The launcher image's user.
	for _, f := range []struct{ host, line string }{
		{"/etc/passwd", fmt.Sprintf("qemu:x:%d:%d:qemu:/nonexistent:/usr/sbin/nologin\n", layout.LauncherUID, layout.LauncherUID)},
		{"/etc/group", fmt.Sprintf("qemu:x:%d:\n", layout.LauncherUID)},
	} {
		b, err := os.ReadFile(f.host)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(base, filepath.Base(f.host))
		if err := os.WriteFile(path, append(b, f.line...), 0o644); err != nil {
			return nil, err
		}
		if f.host == "/etc/passwd" {
			n.passwd = path
		} else {
			n.group = path
		}
	}
	// /dev/net/tun as a device plugin gives it to the launcher container.
	n.tun = filepath.Join(base, "tun")
	if err := unix.Mknod(n.tun, unix.S_IFCHR|0o600, int(unix.Mkdev(10, 200))); err != nil {
		return nil, fmt.Errorf("mknod tun: %w", err)
	}
	if err := os.Chown(n.tun, layout.LauncherUID, layout.LauncherUID); err != nil {
		return nil, err
	}
	// Each launcher gets an emptyDir-like tmpfs at /dev/fdset, as its pod does; the mount
	// point must exist on the host. It stays there: an empty directory nobody uses.
	if err := os.MkdirAll(layout.FDSetDir, 0o755); err != nil {
		return nil, err
	}
	for _, h := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err == nil {
			n.cgroups = filepath.Join(h, "hangar-node-test")
			break
		}
	}
	if n.cgroups == "" {
		return nil, fmt.Errorf("no cgroup hierarchy to put launchers in")
	}
	if err := os.MkdirAll(n.cgroups, 0o755); err != nil {
		return nil, err
	}
	return n, nil
}

// socketVolume is the host directory of a launcher pod's socket volume.
func (n *node) socketVolume(podUID types.UID) string {
	return filepath.Join(n.podsDir, string(podUID), "volumes", "kubernetes.io~empty-dir", layout.SocketVolume)
}

// launcherRun is one virt-launcher process, run as in its pod, and its directories.
type launcherRun struct {
	t       *testing.T
	vmi     *v1.VirtualMachineInstance
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process exited; exitErr is then set
	exitErr error
	podUID  types.UID
	cgroup  string
	// Host paths of the pod's volumes.
	socketDir, stateDir, runDir, ephemeralDir string
	dir                                       *podsockets.Dir
	client                                    *api.Client
	start                                     time.Time
}

// launcherOptions say how to run a launcher beyond its instance.
type launcherOptions struct {
	// netns is the network namespace (ip netns) of the pod; the host's when empty.
	netns string
	// podUID is the launcher pod's UID; a new one when empty.
	podUID types.UID
	// args are extra flags.
	args []string
	// sharedRunPath mounts the run and socket directories at the same paths in every
	// launcher that asks for it, as a pod's are: the two ends of a migration name their
	// sockets by those paths (the domain's definition travels from source to target).
	sharedRunPath bool
}

func startLauncher(t *testing.T, vmi *v1.VirtualMachineInstance, extraArgs ...string) *launcherRun {
	return startLauncherWith(t, launcherOptions{args: extraArgs}, vmi)
}

// startLauncherWith runs virt-launcher for vmi as in its pod and waits until it answers.
func startLauncherWith(t *testing.T, o launcherOptions, vmi *v1.VirtualMachineInstance) *launcherRun {
	t.Helper()
	env := testEnv(t)
	n := testNode(t)
	if o.podUID == "" {
		o.podUID = types.UID(uuid.NewUUID())
	}
	r := &launcherRun{t: t, vmi: vmi, exited: make(chan struct{}), podUID: o.podUID}

	// The pod's volumes: the socket volume where the kubelet would have it, the others
	// anywhere; all the launcher's user's.
	r.socketDir = n.socketVolume(o.podUID)
	private, err := os.MkdirTemp(n.base, "pod")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(private) })
	r.stateDir, r.runDir, r.ephemeralDir = filepath.Join(private, "libvirt"), filepath.Join(private, "run"), filepath.Join(private, "ephemeral")
	for _, d := range []string{r.socketDir, r.stateDir, r.runDir, r.ephemeralDir} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.Chmod(private, 0o755))
	for _, d := range []string{private, r.socketDir, r.stateDir, r.runDir, r.ephemeralDir} {
		require.NoError(t, os.Chown(d, layout.LauncherUID, layout.LauncherUID))
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Join(n.podsDir, string(o.podUID))) })
	// Inside the launcher's mount namespace the socket volume is at a short path, as in the
	// container (/var/run/hangar/sockets): sockets are bound by path, and sun_path is short.
	mountPoint := filepath.Join(private, "s")
	if o.sharedRunPath {
		mountPoint = filepath.Join(n.base, "s") // the same in every pod, as the run directory
	}
	require.NoError(t, os.MkdirAll(mountPoint, 0o755))

	r.cgroup = filepath.Join(n.cgroups, "pod"+string(o.podUID))
	require.NoError(t, os.MkdirAll(r.cgroup, 0o755))

	runDirArg := r.runDir
	logName := vmi.Name + ".launcher.log"
	if o.sharedRunPath {
		runDirArg = filepath.Join(n.base, "run")
		require.NoError(t, os.MkdirAll(runDirArg, 0o755))
		logName = vmi.Name + "-" + string(o.podUID)[:8] + ".launcher.log"
	}
	logFile, err := os.Create(filepath.Join(env.outDir, logName))
	require.NoError(t, err)
	args := append([]string{
		"--namespace", vmi.Namespace, "--name", vmi.Name, "--uid", string(vmi.UID),
		"--socket-dir", mountPoint, "--state-dir", r.stateDir, "--run-dir", runDirArg, "--ephemeral-dir", r.ephemeralDir,
		"--use-emulation", "--kernel-boot-root", env.kernelBootRoot, "--final-wait", "10s",
	}, o.args...)
	script := strings.Join([]string{
		"set -e",
		"mount --bind " + n.passwd + " /etc/passwd",
		"mount --bind " + n.group + " /etc/group",
		"mount --bind " + n.tun + " /dev/net/tun",
		fmt.Sprintf("mount -t tmpfs -o mode=0700,uid=%d,gid=%d,size=1m hangar-fdsets %s", layout.LauncherUID, layout.LauncherUID, layout.FDSetDir),
		"mount --bind " + r.socketDir + " " + mountPoint,
		"mount --bind " + r.runDir + " " + runDirArg, // the same directory unless sharedRunPath
		fmt.Sprintf(`exec setpriv --reuid=%d --regid=%d --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs "$@"`, layout.LauncherUID, layout.LauncherUID),
	}, "\n")
	argv := []string{"unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "launcher", n.launcher}
	argv = append(argv, args...)
	if o.netns != "" {
		argv = append([]string{"ip", "netns", "exec", o.netns}, argv...)
	}
	// Into the pod's cgroup first: ip netns exec remounts /sys, cgroups included.
	join := `echo $$ > "$0" && exec "$@"`
	argv = append([]string{"/bin/sh", "-c", join, filepath.Join(r.cgroup, "cgroup.procs")}, argv...)
	r.cmd = exec.Command(argv[0], argv[1:]...)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, r.cmd.Start())
	go func() {
		r.exitErr = r.cmd.Wait()
		logFile.Close()
		close(r.exited)
	}()
	t.Cleanup(r.kill)

	// As virt-handler: the pod's socket volume, every connection to a verified process of it.
	r.dir, err = n.pods.Dir(o.podUID, layout.SocketVolume)
	require.NoError(t, err)
	t.Cleanup(func() { r.dir.Close() })
	r.client = api.NewDialClient(func(context.Context) (net.Conn, error) { return r.dir.Dial(api.SocketName) })
	t.Cleanup(r.client.Close)
	deadline := time.Now().Add(60 * time.Second)
	for {
		h, err := r.client.Healthz(context.Background())
		if err == nil {
			require.Equal(t, api.Version, h.Version)
			require.Equal(t, string(vmi.UID), h.UID)
			break
		}
		select {
		case <-r.exited:
			t.Fatalf("virt-launcher exited before it answered: %v (log %s)", r.exitErr, logFile.Name())
		default:
		}
		require.True(t, time.Now().Before(deadline), "virt-launcher did not answer: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
	return r
}

// State is the launcher's current state (an error counts as no state).
func (r *launcherRun) State() api.State {
	s, _ := r.client.State(context.Background())
	return s
}

// kill makes sure nothing of this run survives the test: every process of its pod cgroup
// (the launcher, its libvirtd, QEMU), then the cgroup.
func (r *launcherRun) kill() {
	select {
	case <-r.exited:
	default:
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := cgroupPids(r.cgroup)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			r.t.Errorf("processes of the launcher's cgroup survive: %v", pids)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = os.Remove(r.cgroup)
}

func cgroupPids(cgroup string) []int {
	b, err := os.ReadFile(filepath.Join(cgroup, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// qemuPid is the guest's QEMU process.
func (r *launcherRun) qemuPid() int {
	b, err := os.ReadFile(libvirtd.QEMUPidFile(r.stateDir, r.vmi.Namespace+"_"+r.vmi.Name))
	require.NoError(r.t, err)
	var pid int
	_, err = fmt.Sscan(string(b), &pid)
	require.NoError(r.t, err)
	return pid
}

// dial connects to one of the launcher's sockets as virt-handler does.
func (r *launcherRun) dial(socket string) net.Conn {
	c, err := r.dir.Dial(socket)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { c.Close() })
	return c
}

// console dials the launcher's console relay.
func (r *launcherRun) console() net.Conn { return r.dial(api.ConsoleSocketName) }
