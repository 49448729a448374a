package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kubectl runs the real kubectl against the shared virt-api, with a private discovery cache.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl is part of every development machine and CI")
	cmd := exec.Command(path, append([]string{"--kubeconfig", api.Kubeconfig, "--cache-dir", t.TempDir()}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// TestKubectl drives virt-api the way a user does: kubectl behaves as on a built-in type.
func TestKubectl(t *testing.T) {
	ns := "kubectl"
	out := kubectl(t, "-n", ns, "apply", "--server-side", "-f", "testdata/vm-cirros.yaml")
	assert.Contains(t, out, "virtualmachine.kubevirt.io/vm-cirros serverside-applied")
	// Re-applying the same manifest, client-side this time, is accepted too.
	kubectl(t, "-n", ns, "apply", "-f", "testdata/vm-cirros.yaml")

	out = kubectl(t, "-n", ns, "get", "vms")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"NAME", "AGE", "STATUS", "READY"}, strings.Fields(lines[0]))
	assert.Equal(t, "vm-cirros", strings.Fields(lines[1])[0])

	out = kubectl(t, "-n", ns, "get", "vm", "vm-cirros", "-o", "jsonpath={.spec.template.spec.domain.devices.disks[*].name}")
	assert.Equal(t, "containerdisk cloudinitdisk", out)

	out = kubectl(t, "-n", ns, "describe", "vm", "vm-cirros")
	assert.Contains(t, out, "Name:         vm-cirros")
	assert.Contains(t, out, "kubevirt/cirros-container-disk-demo:latest")

	out = kubectl(t, "explain", "virtualmachine.spec.runStrategy")
	assert.Contains(t, out, "RerunOnFailure")
	assert.Contains(t, out, "mutually exclusive with running")

	out = kubectl(t, "-n", ns, "patch", "vm", "vm-cirros", "--type=merge", "-p", `{"metadata":{"labels":{"patched":"yes"}}}`)
	assert.Contains(t, out, "patched")

	out = kubectl(t, "-n", ns, "label", "vm", "vm-cirros", "dry=run", "--dry-run=server")
	assert.Contains(t, out, "(server dry run)")
	out = kubectl(t, "-n", ns, "get", "vm", "vm-cirros", "-o", "jsonpath={.metadata.labels.dry}")
	assert.Empty(t, out, "a server-side dry run changes nothing")

	out = kubectl(t, "-n", ns, "get", "all")
	assert.Contains(t, out, "virtualmachine.kubevirt.io/vm-cirros")

	out = kubectl(t, "-n", ns, "delete", "vm", "vm-cirros")
	assert.Contains(t, out, `virtualmachine.kubevirt.io "vm-cirros" deleted`)
	out = kubectl(t, "-n", ns, "get", "vms", "-o", "name")
	assert.Empty(t, strings.TrimSpace(out))
}

func TestKubectlScale(t *testing.T) {
	ns := "kubectl-scale"
	kubectl(t, "-n", ns, "apply", "-f", "testdata/vmirs.yaml")
	out := kubectl(t, "-n", ns, "scale", "vmirs", "web", "--replicas=3")
	assert.Contains(t, out, "scaled")
	out = kubectl(t, "-n", ns, "get", "vmirs", "web", "-o", "jsonpath={.spec.replicas}")
	assert.Equal(t, "3", out)
	out = kubectl(t, "-n", ns, "get", "vmirs")
	assert.Equal(t, []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"}, strings.Fields(strings.Split(out, "\n")[0]))
}
