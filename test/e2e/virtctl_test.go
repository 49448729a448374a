//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// TestVirtctlConsoleRefusedAtOnce: as KubeVirt's scripts expect, `virtctl console` on a VM
// that does not exist, or that is stopped, exits non-zero within a second with the server's
// message, through kube-apiserver and virt-api of the cluster; it waits only for an instance
// that is starting.
func TestVirtctlConsoleRefusedAtOnce(t *testing.T) {
	ns := namespace(t, "e2e-virtctl")
	bin := filepath.Join(t.TempDir(), "virtctl")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/virtctl").CombinedOutput()
	require.NoError(t, err, string(out))
	_, err = hangar.KubevirtV1().VirtualMachines(ns).Create(context.Background(), &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "halted"},
		Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyHalted),
			Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: guestSpec()}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	for _, args := range [][]string{
		{"console", "missing"},
		{"console", "missing", "--timeout=1"}, // KubeVirt's minutes
		{"console", "halted"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			took := time.Since(start)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "virtctl fails: %s", out)
			assert.NotZero(t, exit.ExitCode())
			assert.Less(t, took, time.Second, "refused at once, not retried: %s", out)
			assert.Contains(t, string(out), `virtualmachineinstances.subresources.kubevirt.io "`+args[1]+`" not found`, "the server's message")
			t.Logf("exit %d after %v: %s", exit.ExitCode(), took.Round(time.Millisecond), strings.TrimSpace(string(out)))
		})
	}
}
