//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// exec runs a command in an instance's compute container, as a user with pods/exec (the edit
// role) can.
func execCompute(t *testing.T, ns string, pod corev1.Pod, command string) (string, error) {
	t.Helper()
	out, stderr, err := kubectlStdout(t, "-n", ns, "exec", pod.Name, "-c", layout.ComputeContainer, "--", "sh", "-c", command)
	if err != nil {
		return out + stderr, err
	}
	return out, nil
}

// TestLauncherPodIsUnprivileged: in a namespace that enforces Pod Security "restricted", a
// guest runs, pauses and resumes; inside its launcher's compute container nobody is root and
// no process has a capability.
func TestLauncherPodIsUnprivileged(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-restricted")
	got, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "restricted", got.Labels["pod-security.kubernetes.io/enforce"])

	_, err = hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	vmi := waitVMI(t, ns, "plain", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	console := attach(t, ns, "plain", "console")
	console.waitFor(t, banner, 60*time.Second)
	pods := launcherPods(t, ns, vmi.UID)
	require.Len(t, pods, 1)
	pod := pods[0]

	out, err := execCompute(t, ns, pod, "id -u; id -g")
	require.NoError(t, err, out)
	assert.Equal(t, "107\n107\n", out, "the compute container runs as KubeVirt's qemu user")
	// Every process of the container: virt-launcher, libvirtd, QEMU.
	out, err = execCompute(t, ns, pod, `for p in /proc/[0-9]*; do [ -r $p/status ] && awk '/^(Name|Uid|CapEff):/ {printf "%s ", $2} END {print ""}' $p/status; done`)
	require.NoError(t, err, out)
	procs := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		procs++
		assert.NotEqual(t, "0", f[1], "process %s runs as root", f[0])
		assert.Equal(t, "0000000000000000", f[2], "process %s has capabilities", f[0])
	}
	assert.GreaterOrEqual(t, procs, 3, "virt-launcher, libvirtd and QEMU: %s", out)
	out, err = execCompute(t, ns, pod, "touch /usr/bin/x 2>&1; echo $?")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Read-only file system")

	// Pause and unpause through virt-handler, in the restricted namespace.
	out, err = virtctl(t, "-n", ns, "pause", "vmi", "plain")
	require.NoError(t, err, out)
	waitVMI(t, ns, "plain", 30*time.Second, func(v *v1.VirtualMachineInstance) bool {
		c := condition(v, v1.VirtualMachineInstancePaused)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	out, err = virtctl(t, "-n", ns, "unpause", "vmi", "plain")
	require.NoError(t, err, out)
	waitVMI(t, ns, "plain", 30*time.Second, func(v *v1.VirtualMachineInstance) bool {
		return condition(v, v1.VirtualMachineInstancePaused) == nil
	})
	console.typeUntil(t, "echo unpaused-$((6*7))", "unpaused-42")
}

// TestTenantCannotRedirectTheHandler: a tenant with pods/exec rewrites the socket volume of
// their own launcher so that virt-handler (privileged, in the host's PID namespace) would
// connect them to another tenant's console or to a socket of the node. Every stream is refused,
// the other tenant's console stays theirs, and the tenant's own streams work once the
// launcher's sockets are back.
func TestTenantCannotRedirectTheHandler(t *testing.T) {
	ctx := context.Background()
	nsA, nsB := namespace(t, "e2e-tenant-a"), namespace(t, "e2e-tenant-b")
	for _, ns := range []string{nsA, nsB} {
		_, err := hangar.KubevirtV1().VirtualMachineInstances(ns).Create(ctx,
			&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: guestSpec()}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	a := waitVMI(t, nsA, "guest", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	b := waitVMI(t, nsB, "guest", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	consoleB := attach(t, nsB, "guest", "console")
	consoleB.waitFor(t, banner, 60*time.Second)
	podsA, podsB := launcherPods(t, nsA, a.UID), launcherPods(t, nsB, b.UID)
	require.Len(t, podsA, 1)
	require.Len(t, podsB, 1)
	podA, podB := podsA[0], podsB[0]

	dir := layout.SocketMountPath
	otherConsole := fmt.Sprintf("../../../../%s/volumes/kubernetes.io~empty-dir/%s/console.sock", podB.UID, layout.SocketVolume)
	attacks := []struct {
		name, socket, stream, link string
	}{
		{"console: relative link to the other tenant's console", "console.sock", "console", otherConsole},
		{"console: link through /proc/1/root to the node's container runtime", "console.sock", "console", "/proc/1/root/run/containerd/containerd.sock"},
		{"vnc: absolute link to the node's kubelet device-plugin socket", "vnc.sock", "vnc", "/var/lib/kubelet/device-plugins/kubelet.sock"},
	}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			path := dir + "/" + at.socket
			out, err := execCompute(t, nsA, podA, fmt.Sprintf("mv %s %s.orig && ln -s %s %s && ls -l %s", path, path, at.link, path, path))
			require.NoError(t, err, out)
			t.Cleanup(func() {
				out, err := execCompute(t, nsA, podA, fmt.Sprintf("rm %s && mv %s.orig %s", path, path, path))
				require.NoError(t, err, out)
			})
			err = tryStream(nsA, "guest", at.stream)
			require.Error(t, err, "the handler followed the tenant's link")
			t.Logf("refused: %v", err)
		})
	}

	// The other tenant's console was never taken over: it is still theirs.
	consoleB.typeUntil(t, "echo still-b-$((40+2))", "still-b-42")
	select {
	case <-consoleB.closed:
		t.Fatal("tenant B's console was closed")
	default:
	}
	// With the launcher's sockets back, tenant A's console and VNC work.
	attach(t, nsA, "guest", "console").typeUntil(t, "echo mine-$((3+4))", "mine-7")
	vnc := attach(t, nsA, "guest", "vnc")
	vnc.waitFor(t, "RFB 003.008", 30*time.Second)
}

// tryStream opens a console or VNC stream once, as virtctl does, and closes it.
func tryStream(ns, name, which string) error {
	conn, err := dialStream(ns, name, which)
	if err != nil {
		return err
	}
	conn.Close()
	return nil
}
