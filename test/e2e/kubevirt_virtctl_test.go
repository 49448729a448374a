//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// kubevirtVirtctlBinary is KubeVirt's own virtctl v1.6.0 (test/kubevirtctl), built from the
// Go module proxy.
var kubevirtVirtctlBinary = &goBinary{name: "kubevirt-virtctl", dir: "test/kubevirtctl", pkg: "kubevirt.io/kubevirt/cmd/virtctl"}

// kubevirtVirtctl runs KubeVirt's own virtctl with stdin, and returns what it printed.
func kubevirtVirtctl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(kubevirtVirtctlBinary.Path(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubeVirtVirtctl runs the commands of issue 33 with KubeVirt's own virtctl v1.6.0, as a
// new user would against KubeVirt: port-forward, ssh and scp with its built-in SSH client
// (the guest's host key accepted at its prompt), addvolume and removevolume, memory-dump get
// and remove, and reset.
func TestKubeVirtVirtctl(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "e2e-kubevirt-virtctl")
	hotplugClaim(t, ns, "hotdisk")
	spec := guestSpec()
	spec.Domain.Firmware.KernelBoot.Container.InitrdPath = sshInitrd
	identity, authorized := sshIdentity(t)
	_, err := hangar.KubevirtV1().VirtualMachines(ns).Create(ctx, &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "hc1"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptrTo(v1.RunStrategyAlways), Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: spec}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = hangar.KubevirtV1().VirtualMachines(ns).Delete(context.Background(), "hc1", metav1.DeleteOptions{})
	})
	waitVMI(t, ns, "hc1", 90*time.Second, func(v *v1.VirtualMachineInstance) bool { return v.Status.Phase == v1.Running })
	console := attach(t, ns, "hc1", "console")
	console.waitFor(t, banner, 90*time.Second)
	console.typeUntil(t, loadDiskDrivers+"; echo loaded-$((6*7))", "loaded-42")
	startSSHServer(t, console, authorized)

	t.Run("ssh and scp", func(t *testing.T) {
		knownHosts := filepath.Join(t.TempDir(), "known_hosts")
		common := []string{"-n", ns, "--local-ssh=false", "-i", identity, "--known-hosts", knownHosts}
		var out string
		require.Eventually(t, func() bool {
			out, err = kubevirtVirtctl(t, "yes\n", append(append([]string{"ssh"}, common...), "root@vm/hc1", "--command", "echo ssh-$((6*7))")...)
			return err == nil && strings.Contains(out, "ssh-42")
		}, 90*time.Second, 2*time.Second, "KubeVirt's virtctl ssh runs a command (last: %s)", out)
		known, err := os.ReadFile(knownHosts)
		require.NoError(t, err)
		assert.NotEmpty(t, known, "the host key it accepted is recorded")

		sent := filepath.Join(t.TempDir(), "sent")
		require.NoError(t, os.WriteFile(sent, []byte("hangar-scp-"+ns), 0o600))
		out, err = kubevirtVirtctl(t, "", append(append([]string{"scp"}, common...), sent, "root@vm/hc1:/tmp/copied")...)
		require.NoError(t, err, out)
		back := filepath.Join(t.TempDir(), "back")
		out, err = kubevirtVirtctl(t, "", append(append([]string{"scp"}, common...), "root@vm/hc1:/tmp/copied", back)...)
		require.NoError(t, err, out)
		got, err := os.ReadFile(back)
		require.NoError(t, err)
		assert.Equal(t, "hangar-scp-"+ns, string(got))
	})

	t.Run("port-forward", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		fwd := exec.Command(kubevirtVirtctlBinary.Path(t), "--kubeconfig", kubeconfig, "port-forward", "vm/hc1", "-n", ns, fmt.Sprintf("%d:22", port))
		require.NoError(t, fwd.Start())
		t.Cleanup(func() { _ = fwd.Process.Kill(); _ = fwd.Wait() })
		var line string
		require.Eventually(t, func() bool {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err != nil {
				return false
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			line, _ = bufio.NewReader(c).ReadString('\n')
			return strings.HasPrefix(line, "SSH-2.0-")
		}, 60*time.Second, time.Second, "the guest's SSH server's banner through the forward (last: %q)", line)
	})

	t.Run("addvolume and removevolume", func(t *testing.T) {
		out, err := kubevirtVirtctl(t, "", "addvolume", "hc1", "-n", ns, "--volume-name=hotdisk")
		require.NoError(t, err, out)
		vmi := waitVMI(t, ns, "hc1", 120*time.Second, func(v *v1.VirtualMachineInstance) bool {
			return len(v.Status.VolumeStatus) == 1 && v.Status.VolumeStatus[0].Phase == v1.VolumeReady
		})
		target := vmi.Status.VolumeStatus[0].Target
		console.typeUntil(t, "echo hot-size-$(cat /sys/block/"+target+"/size)", fmt.Sprintf("hot-size-%d", hotplugSize/512))
		out, err = kubevirtVirtctl(t, "", "removevolume", "hc1", "-n", ns, "--volume-name=hotdisk")
		require.NoError(t, err, out)
		waitVMI(t, ns, "hc1", 60*time.Second, func(v *v1.VirtualMachineInstance) bool { return len(v.Status.VolumeStatus) == 0 })
	})

	t.Run("memory-dump", func(t *testing.T) {
		out, err := kubevirtVirtctl(t, "", "memory-dump", "get", "hc1", "-n", ns, "--claim-name=dump", "--create-claim")
		require.NoError(t, err, out)
		var req *v1.VirtualMachineMemoryDumpRequest
		require.Eventually(t, func() bool {
			vm, err := hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "hc1", metav1.GetOptions{})
			require.NoError(t, err)
			req = vm.Status.MemoryDumpRequest
			return req != nil && (req.Phase == v1.MemoryDumpCompleted || req.Phase == v1.MemoryDumpFailed)
		}, 180*time.Second, time.Second, "the dump ends")
		require.Equal(t, v1.MemoryDumpCompleted, req.Phase, "%+v", req)
		out, err = kubevirtVirtctl(t, "", "memory-dump", "remove", "hc1", "-n", ns)
		require.NoError(t, err, out)
		require.Eventually(t, func() bool {
			vm, err := hangar.KubevirtV1().VirtualMachines(ns).Get(ctx, "hc1", metav1.GetOptions{})
			require.NoError(t, err)
			return vm.Status.MemoryDumpRequest == nil
		}, 120*time.Second, time.Second, "the request goes")
	})

	t.Run("reset", func(t *testing.T) {
		console.typeUntil(t, "echo before-reset-$((5*5))", "before-reset-25")
		mark := len(console.output())
		out, err := kubevirtVirtctl(t, "", "reset", "hc1", "-n", ns)
		require.NoError(t, err, out)
		require.Eventually(t, func() bool { return strings.Contains(console.output()[mark:], banner) },
			90*time.Second, 100*time.Millisecond, "the banner again after the reset")
	})
}
