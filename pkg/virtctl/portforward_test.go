package virtctl

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

func TestParseForwardTarget(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want forwardTarget
		err  string
	}{
		{arg: "vm/demo", want: forwardTarget{Resource: "virtualmachines", Name: "demo"}},
		{arg: "vmi/demo", want: forwardTarget{Resource: "virtualmachineinstances", Name: "demo"}},
		{arg: "vms/demo/ns1", want: forwardTarget{Resource: "virtualmachines", Name: "demo", Namespace: "ns1"}},
		{arg: "VirtualMachineInstance/demo", want: forwardTarget{Resource: "virtualmachineinstances", Name: "demo"}},
		{arg: "virtualmachines/demo", want: forwardTarget{Resource: "virtualmachines", Name: "demo"}},
		{arg: "demo", err: "must be TYPE/NAME"},
		{arg: "pod/demo", err: `unsupported resource type "pod"`},
		{arg: "vm/", err: "name cannot be empty"},
		{arg: "vm/demo/", err: "namespace cannot be empty"},
		{arg: "vm/demo/ns/x", err: "more than two"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			got, err := parseForwardTarget(tc.arg)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseForwardedPort(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want forwardedPort
		err  string
	}{
		{arg: "8080", want: forwardedPort{Local: 8080, Remote: 8080, Protocol: "tcp"}},
		{arg: "2222:22", want: forwardedPort{Local: 2222, Remote: 22, Protocol: "tcp"}},
		{arg: "tcp/2222:22", want: forwardedPort{Local: 2222, Remote: 22, Protocol: "tcp"}},
		{arg: "udp/5353:53", want: forwardedPort{Local: 5353, Remote: 53, Protocol: "udp"}},
		{arg: "UDP/53", want: forwardedPort{Local: 53, Remote: 53, Protocol: "udp"}},
		{arg: ":22", want: forwardedPort{Local: 0, Remote: 22, Protocol: "tcp"}},
		{arg: "0:22", want: forwardedPort{Local: 0, Remote: 22, Protocol: "tcp"}},
		{arg: "sctp/22", err: "neither tcp nor udp"},
		{arg: "ssh", err: "not a number"},
		{arg: "2222:ssh", err: "not a number"},
		{arg: "70000", err: "70000 is not a port"},
		{arg: "22:0", err: "0 is not a port"},
		{arg: "0", err: "a remote port is needed"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			got, err := parseForwardedPort(tc.arg)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// testCLI is virtctl on a kubeconfig whose context's namespace is "ctx-ns", with local
// clients recorded instead of run.
type testCLI struct {
	ran              [][]string
	out, errOut      bytes.Buffer
	kubeconfig, home string
}

func newTestCLI(t *testing.T) *testCLI {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: ctx-ns}}]
current-context: x
`), 0o600))
	t.Setenv("HOME", dir)
	t.Setenv("USER", "alice")
	return &testCLI{kubeconfig: kubeconfig, home: dir}
}

func (tc *testCLI) run(t *testing.T, args ...string) error {
	t.Helper()
	return tc.runWithInput(t, "", args...)
}

func (tc *testCLI) runWithInput(t *testing.T, input string, args ...string) error {
	t.Helper()
	tc.out.Reset()
	c := &cliContext{flags: genericclioptions.NewConfigFlags(true),
		streams: Streams{In: strings.NewReader(input), Out: &tc.out, ErrOut: &tc.errOut},
		run: func(cmd *exec.Cmd) error {
			tc.ran = append(tc.ran, append([]string{filepath.Base(cmd.Path)}, cmd.Args[1:]...))
			return nil
		}}
	root := newCommand(c)
	root.SetArgs(append([]string{"--kubeconfig", tc.kubeconfig}, args...))
	root.SetOut(&tc.out)
	root.SetErr(&tc.errOut)
	return root.Execute()
}

// TestLocalClients: ssh and scp with the local client get KubeVirt's command lines: the
// target as KIND.NAME.NAMESPACE, this virtctl's port-forward --stdio as ProxyCommand.
func TestLocalClients(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	proxy := func(target, port string) string {
		return "ProxyCommand=" + shellQuote(self) + " --kubeconfig=KUBECONFIG port-forward --stdio=true " + target + " " + port
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
		err  string
	}{
		{name: "ssh user@vm", args: []string{"ssh", "--local-ssh", "root@vm/demo"},
			want: []string{"ssh", "-o", proxy("vm/demo/ctx-ns", "22"), "root@vm.demo.ctx-ns"}},
		{name: "ssh -l, namespace in the target, port, command", args: []string{"ssh", "--local-ssh", "-l", "debian", "-p", "2222", "-c", "uname -a", "vmi/demo/other"},
			want: []string{"ssh", "-o", proxy("vmi/demo/other", "2222"), "debian@vmi.demo.other", "uname -a"}},
		{name: "ssh user from the environment, -n", args: []string{"ssh", "--local-ssh", "-n", "flag-ns", "vm/demo"},
			want: []string{"ssh", "-o", proxy("vm/demo/flag-ns", "22"), "alice@vm.demo.flag-ns"}},
		{name: "ssh -i and -t", args: []string{"ssh", "--local-ssh", "-i", "/keys/id", "-t", "-o StrictHostKeyChecking=no", "-t", "-v", "root@vm/demo"},
			want: []string{"ssh", "-o", proxy("vm/demo/ctx-ns", "22"), "-o", "StrictHostKeyChecking=no", "-v", "-i", "/keys/id", "root@vm.demo.ctx-ns"}},
		{name: "ssh bad target", args: []string{"ssh", "--local-ssh", "root@demo"}, err: "must be TYPE/NAME"},
		{name: "ssh empty user", args: []string{"ssh", "--local-ssh", "@vm/demo"}, err: "user name before '@'"},
		{name: "scp to the guest, local by default", args: []string{"scp", "file.bin", "root@vm/demo:/tmp/file.bin"},
			want: []string{"scp", "-o", proxy("vm/demo/ctx-ns", "22"), "file.bin", "root@vm.demo.ctx-ns:/tmp/file.bin"}},
		{name: "scp from the guest, recursive, preserve, port", args: []string{"scp", "-r", "--preserve", "-p", "2022", "vmi/demo/other:/var/log", "logs"},
			want: []string{"scp", "-o", proxy("vmi/demo/other", "2022"), "-r", "-p", "alice@vmi.demo.other:/var/log", "logs"}},
		{name: "scp two remotes", args: []string{"scp", "vm/a:/x", "vm/b:/y"}, err: "remote location to another"},
		{name: "scp no remote", args: []string{"scp", "a", "b"}, err: "neither"},
		{name: "scp built-in, recursive", args: []string{"scp", "--local-ssh=false", "-r", "a", "vm/demo:b"}, err: "single files"},
		{name: "port-forward --stdio takes one port", args: []string{"port-forward", "--stdio", "vm/demo", "22", "80"}, err: "exactly one port"},
		{name: "port-forward needs a port", args: []string{"port-forward", "vm/demo"}, err: "requires at least 2 arg(s)"},
		{name: "port-forward bad port", args: []string{"port-forward", "vm/demo", "udp/0"}, err: "a remote port is needed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli := newTestCLI(t)
			err := cli.run(t, tc.args...)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Empty(t, cli.ran)
				return
			}
			require.NoError(t, err)
			require.Len(t, cli.ran, 1)
			got := cli.ran[0]
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], cli.kubeconfig, "KUBECONFIG")
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestShellQuote(t *testing.T) {
	assert.Equal(t, "vm/demo/ns", shellQuote("vm/demo/ns"))
	assert.Equal(t, "--kubeconfig=/a/b", shellQuote("--kubeconfig=/a/b"))
	assert.Equal(t, "'/my dir/virtctl'", shellQuote("/my dir/virtctl"))
	assert.Equal(t, `'it'\''s'`, shellQuote("it's"))
	assert.Equal(t, "''", shellQuote(""))
}
