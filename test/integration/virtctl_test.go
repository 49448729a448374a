package integration

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/virtctl"
	"github.com/hangarvm/hangar/test/integration/framework"
)

// runVirtctl runs virtctl against a virt-api and returns its exit code and output.
func runVirtctl(kubeconfig string, stdin io.Reader, args ...string) (int, string) {
	var out bytes.Buffer
	code := virtctl.Main(append([]string{"--kubeconfig", kubeconfig}, args...), stdin, &out, &out)
	return code, out.String()
}

func TestVirtctlActions(t *testing.T) {
	ns := "virtctl"
	_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(context.Background(), newVM("cli", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	run := func(args ...string) (int, string) {
		return runVirtctl(api.Kubeconfig, nil, append([]string{"-n", ns}, args...)...)
	}

	code, out := run("start", "cli", "--dry-run")
	require.Equal(t, 0, code, out)
	assert.Equal(t, v1.RunStrategyHalted, *getVM(t, ns, "cli").Spec.RunStrategy)

	code, out = run("start", "cli")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "VM cli was scheduled to start\n", out)
	assert.Equal(t, v1.RunStrategyAlways, *getVM(t, ns, "cli").Spec.RunStrategy)

	code, out = run("start", "cli")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "Always does not support manual start requests")

	code, out = run("restart", "cli", "--grace-period=0")
	assert.Equal(t, 1, code, "a forced restart needs --force")
	assert.Contains(t, out, "--force --grace-period=0")

	code, out = run("stop", "cli")
	require.Equal(t, 0, code, out)
	assert.Equal(t, v1.RunStrategyHalted, *getVM(t, ns, "cli").Spec.RunStrategy)

	code, out = run("pause", "vmi", "cli")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "not found")

	code, out = run("version")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Client Version: version.Info{")
	assert.Contains(t, out, "Server Version: version.Info{")
}

// lockedBuffer is an output the test reads while virtctl writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestVirtctlConsole(t *testing.T) {
	ctx := context.Background()
	agent := newNodeAgent(t)
	server := framework.StartVirtAPIWith(t, func(o *virtapi.Options) { o.Handlers = agent.handlers })
	agent.serve(t, server.Client)
	vmis := server.Client.KubevirtV1().VirtualMachineInstances("default")
	vmi, err := vmis.Create(ctx, newVMI("tty"), metav1.CreateOptions{})
	require.NoError(t, err)
	agent.fakeConsole(t, vmi)

	stdin, keys := io.Pipe()
	out := &lockedBuffer{}
	done := make(chan int)
	go func() {
		done <- virtctl.Main([]string{"--kubeconfig", server.Kubeconfig, "console", "tty", "--timeout", "30s"}, stdin, out, out)
	}()

	// virtctl waits for the instance to run.
	time.Sleep(500 * time.Millisecond)
	vmi.Status.Phase, vmi.Status.NodeName = v1.Running, "node-a"
	_, err = vmis.UpdateStatus(ctx, vmi, metav1.UpdateOptions{})
	require.NoError(t, err)

	require.Eventually(t, func() bool { return strings.Contains(out.String(), "HANGAR-GUEST-READY") },
		20*time.Second, 50*time.Millisecond, "output so far: %q", out.String())
	assert.Contains(t, out.String(), "Waiting for the console of tty: VMI tty is", "it says what it waits for")
	assert.Contains(t, out.String(), "Successfully connected to tty console. The escape sequence is ^]")
	_, err = keys.Write([]byte("uname\r\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "echo: uname") },
		10*time.Second, 50*time.Millisecond, "output so far: %q", out.String())

	_, err = keys.Write([]byte{0x1d})
	require.NoError(t, err)
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "Ctrl+] ends the session cleanly")
	case <-time.After(10 * time.Second):
		t.Fatal("virtctl console did not end on Ctrl+]")
	}
}

// TestVirtctlStreamRefusals: console and vnc give up at once, with the server's message, on
// what waiting cannot change (KubeVirt's scripts rely on a quick non-zero exit).
func TestVirtctlStreamRefusals(t *testing.T) {
	ns := "virtctl-refusals"
	_, err := api.Client.KubevirtV1().VirtualMachines(ns).Create(context.Background(), newVM("halted", v1.RunStrategyHalted), metav1.CreateOptions{})
	require.NoError(t, err)
	for _, args := range [][]string{
		{"console", "missing"},
		{"console", "missing", "--timeout=5"},
		{"console", "halted"},
		{"vnc", "missing", "--proxy-only"},
		{"vnc", "missing", "--browser"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			start := time.Now()
			code, out := runVirtctl(api.Kubeconfig, strings.NewReader(""), append([]string{"-n", ns}, args...)...)
			assert.Less(t, time.Since(start), time.Second, "refused at once")
			assert.Equal(t, 1, code, out)
			assert.Contains(t, out, `virtualmachineinstances.subresources.kubevirt.io "`+args[1]+`" not found`, "the server's message")
			assert.NotContains(t, out, "Waiting")
		})
	}
}
