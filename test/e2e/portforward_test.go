//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// goBinary is a Go program the tests build once, in dir (below the repository's root) from
// package pkg, for commands that run in the background (go run would leave its child behind
// when killed) or that come from another module.
type goBinary struct {
	name, dir, pkg string
	once           sync.Once
	path           string
	err            error
}

// Path builds the program on first use and returns where it is.
func (b *goBinary) Path(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", b.name)
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, filepath.Base(b.pkg))
		build := exec.Command("go", "build", "-o", b.path, b.pkg)
		build.Dir = filepath.Join(framework.RepoRoot(), b.dir)
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build %s: %v\n%s", b.name, err, out)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// hangarVirtctl is the project's virtctl.
var hangarVirtctl = &goBinary{name: "virtctl", pkg: "./cmd/virtctl"}

// virtctlBinary is the project's virtctl, built once.
func virtctlBinary(t *testing.T) string { return hangarVirtctl.Path(t) }

func virtctlCmd(t *testing.T, args ...string) *exec.Cmd {
	return exec.Command(virtctlBinary(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// TestPortForward: virtctl port-forward reaches a TCP port of a masquerade and of a bridge
// guest (busybox nc in the guest echoes with cat), on the VM's and the instance's paths, as
// a listening forward and with --stdio; a port nothing listens on says so; a view user is
// refused. virtctl ssh runs a command and virtctl scp copies a file there and back, with the
// built-in client, against the SSH server the test guest brings (dropbear).
func TestPortForward(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-portforward")
	_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "e2e-viewer"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	for _, binding := range []string{"masquerade", "bridge"} {
		t.Run(binding, func(t *testing.T) {
			spec := guestSpec()
			spec.Domain.Firmware.KernelBoot.Container.InitrdPath = sshInitrd
			identity, authorized := sshIdentity(t)
			iface := v1.Interface{Name: "default"}
			if binding == "bridge" {
				iface.Bridge = &v1.InterfaceBridge{}
			} else {
				iface.Masquerade = &v1.InterfaceMasquerade{}
			}
			spec.Networks = []v1.Network{{Name: "default", NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
			spec.Domain.Devices.Interfaces = []v1.Interface{iface}
			vm := &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: binding},
				Spec: v1.VirtualMachineSpec{RunStrategy: ptrTo(v1.RunStrategyAlways),
					Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: spec}}}
			_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{})
			require.NoError(t, err)
			waitVMI(t, ns, binding, 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
			console := attach(t, ns, binding, "console")
			console.waitFor(t, banner, 90*time.Second)
			// busybox nc serves one connection and exits: a loop serves the next.
			console.typeUntil(t, "while true; do nc -l -p 1234 -e cat; done & echo echoing-$((3*3))", "echoing-9")

			// --stdio, through the VM's path and the instance's.
			for _, target := range []string{"vm/" + binding + "/" + ns, "vmi/" + binding + "/" + ns} {
				var out string
				require.Eventually(t, func() bool {
					out = stdioRoundTrip(t, target, "1234", "hello-"+binding+"\n")
					return out == "hello-"+binding+"\n"
				}, 60*time.Second, time.Second, "%s echoes through --stdio (last %q)", target, out)
			}

			// A listening forward: one connection after another, each its own stream.
			local := freeLocalPort(t)
			cmd := virtctlCmd(t, "-n", ns, "port-forward", "vm/"+binding, fmt.Sprintf("%d:1234", local))
			var logs lockedBuffer
			cmd.Stdout, cmd.Stderr = &logs, &logs
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			for i := 0; i < 2; i++ {
				line := fmt.Sprintf("conn-%d\n", i)
				var got string
				require.Eventually(t, func() bool {
					got = tcpRoundTrip(fmt.Sprintf("127.0.0.1:%d", local), line)
					return got == line
				}, 60*time.Second, time.Second, "connection %d through the listening forward (last %q): %s", i, got, logs.String())
			}

			// Nothing listens on 4321: the error says so.
			out, err := virtctl(t, "port-forward", "--stdio=true", "vmi/"+binding+"/"+ns, "4321")
			require.Error(t, err)
			assert.Contains(t, out, "port 4321/tcp of the guest")
			assert.Contains(t, out, "connection refused")

			// view may look, not forward.
			out, err = virtctl(t, "--as=e2e-viewer", "port-forward", "--stdio=true", "vm/"+binding+"/"+ns, "1234")
			require.Error(t, err)
			assert.Contains(t, strings.ToLower(out), "forbidden")

			startSSHServer(t, console, authorized)
			checkSSHAndSCP(t, ns, "vm/"+binding, identity)
			out, err = virtctl(t, "--as=e2e-viewer", "-n", ns, "ssh", "--local-ssh=false", "-i", identity,
				"--known-hosts=", "root@vmi/"+binding, "-c", "true")
			require.Error(t, err, "a view user reaches the guest's SSH server: %s", out)
			assert.Contains(t, strings.ToLower(out), "forbidden")
		})
	}
}

// stdioRoundTrip sends input through virtctl port-forward --stdio and returns the first line
// that comes back.
func stdioRoundTrip(t *testing.T, target, port, input string) string {
	t.Helper()
	cmd := virtctlCmd(t, "port-forward", "--stdio=true", target, port)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	_, _ = io.WriteString(stdin, input)
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s == "" {
			t.Logf("virtctl: %s", stderr.String())
		}
		return s
	case <-time.After(20 * time.Second):
		return ""
	}
}

// lockedBuffer collects a command's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tcpRoundTrip sends line to address and returns the line that comes back ("" on any error).
func tcpRoundTrip(address, line string) string {
	c, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	if _, err := io.WriteString(c, line); err != nil {
		return ""
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := bufio.NewReader(c).ReadString('\n')
	return got
}

func freeLocalPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func ptrTo[T any](v T) *T { return &v }

// TestResetResetsGuest: virtctl reset is a hard reset: the guest boots again (the banner a
// second time) while the instance keeps its UID and its launcher pod.
func TestResetResetsGuest(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-reset")
	vmis := hangar.KubevirtV1().VirtualMachineInstances(ns)
	_, err := vmis.Create(ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "guest"}, Spec: guestSpec()}, metav1.CreateOptions{})
	require.NoError(t, err)
	console := attach(t, ns, "guest", "console")
	console.waitFor(t, banner, 90*time.Second)
	before := waitVMI(t, ns, "guest", 30*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	pods := launcherPods(t, ns, before.UID)
	require.Len(t, pods, 1)
	console.typeUntil(t, "echo before-reset-$((2*21))", "before-reset-42")
	mark := len(console.output())

	out, err := virtctl(t, "-n", ns, "reset", "guest")
	require.NoError(t, err, out)
	assert.Contains(t, out, "VMI guest was scheduled to reset")
	require.Eventually(t, func() bool { return strings.Contains(console.output()[mark:], banner) },
		90*time.Second, 100*time.Millisecond, "the banner again after the reset; saw %q", console.output()[mark:])

	after := waitVMI(t, ns, "guest", 10*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	assert.Equal(t, before.UID, after.UID, "the same instance")
	now := launcherPods(t, ns, after.UID)
	require.Len(t, now, 1)
	assert.Equal(t, pods[0].UID, now[0].UID, "the same launcher pod")
}
