package virtctl

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned/fake"
)

// parsed builds virtctl's command tree, finds the subcommand args name and parses its flags,
// as cobra does before running it.
func parsed(t *testing.T, args ...string) (*cliContext, *cobra.Command, error) {
	t.Helper()
	c := &cliContext{flags: genericclioptions.NewConfigFlags(true), streams: Streams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	root := newCommand(c)
	cmd, rest, err := root.Find(args)
	require.NoError(t, err)
	return c, cmd, cmd.ParseFlags(rest)
}

// TestConsoleTimeout: KubeVirt's `console --timeout` is whole minutes; a duration with its unit
// is taken too, and nothing ambiguous is.
func TestConsoleTimeout(t *testing.T) {
	tests := []struct {
		args    []string
		want    time.Duration
		wantErr string
	}{
		{nil, 5 * time.Minute, ""}, // KubeVirt's default
		{[]string{"--timeout=1"}, time.Minute, ""},
		{[]string{"--timeout", "10"}, 10 * time.Minute, ""},
		{[]string{"--timeout=90s"}, 90 * time.Second, ""},
		{[]string{"--timeout=2m"}, 2 * time.Minute, ""},
		{[]string{"--timeout=1h30m"}, 90 * time.Minute, ""},
		{[]string{"--timeout=0"}, 0, "must be positive"},
		{[]string{"--timeout=-3"}, 0, "must be positive"},
		{[]string{"--timeout=1.5"}, 0, "neither whole minutes"},
		{[]string{"--timeout=soon"}, 0, "neither whole minutes"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, cmd, err := parsed(t, append([]string{"console", "demo"}, tt.args...)...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			got := cmd.Flags().Lookup("timeout").Value.(*minutesOrDuration)
			assert.Equal(t, tt.want, time.Duration(*got))
		})
	}
}

// TestGlobalFlags: the cluster, namespace and identity flags kubectl (and KubeVirt's virtctl)
// take, on every command.
func TestGlobalFlags(t *testing.T) {
	kubeconfig := testKubeconfig(t, "team-a")
	tests := []struct {
		args                []string
		host, ns, as        string
		asGroups            []string
		wantImpersonateUser bool
	}{
		{args: []string{"--kubeconfig", kubeconfig, "start", "demo"}, host: "https://127.0.0.1:6443", ns: "team-a"},
		{args: []string{"--kubeconfig=" + kubeconfig, "-n", "team-b", "stop", "demo"}, host: "https://127.0.0.1:6443", ns: "team-b"},
		{args: []string{"console", "demo", "--kubeconfig", kubeconfig, "--namespace=team-c"}, host: "https://127.0.0.1:6443", ns: "team-c"},
		{args: []string{"--kubeconfig", kubeconfig, "--context", "other", "vnc", "demo"}, host: "https://127.0.0.2:6443", ns: "elsewhere"},
		{args: []string{"--kubeconfig", kubeconfig, "-s", "https://192.0.2.1:443", "expose", "vm", "demo", "--name=x"}, host: "https://192.0.2.1:443", ns: "team-a"},
		{args: []string{"--kubeconfig", kubeconfig, "--as", "alice", "--as-group", "devs", "--as-group", "ops", "restart", "demo"},
			host: "https://127.0.0.1:6443", ns: "team-a", as: "alice", asGroups: []string{"devs", "ops"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[2:], " "), func(t *testing.T) {
			c, _, err := parsed(t, tt.args...)
			require.NoError(t, err)
			cfg, ns, err := c.target()
			require.NoError(t, err)
			assert.Equal(t, tt.host, cfg.Host)
			assert.Equal(t, tt.ns, ns)
			assert.Equal(t, tt.as, cfg.Impersonate.UserName)
			assert.Equal(t, tt.asGroups, cfg.Impersonate.Groups)
		})
	}
}

// TestKubeVirtFlagForms: the other commands' flags as KubeVirt's virtctl spells them.
func TestKubeVirtFlagForms(t *testing.T) {
	for _, args := range [][]string{
		{"start", "demo", "--paused", "--dry-run"},
		{"stop", "demo", "--force", "--grace-period=0", "--dry-run"},
		{"restart", "demo", "--force", "--grace-period", "0"},
		{"pause", "vm", "demo", "--dry-run"},
		{"unpause", "vmi", "demo", "--dry-run"},
		{"migrate", "demo", "--dry-run", "--addedNodeSelector", "zone=a,rack=1"},
		{"migrate-cancel", "demo"},
		{"vnc", "demo", "--proxy-only", "--port=5900", "--address=0.0.0.0"},
		{"vnc", "screenshot", "demo", "--file=shot.png"},
		{"version", "--client"},
		{"guestosinfo", "demo"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, cmd, err := parsed(t, args...)
			require.NoError(t, err)
			require.NoError(t, cmd.ValidateArgs(cmd.Flags().Args()))
		})
	}
}

func TestWaitFor(t *testing.T) {
	gr := schema.GroupResource{Group: "subresources.kubevirt.io", Resource: "virtualmachineinstances/console"}
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}, "demo")
	notRunning := apierrors.NewBadRequest("Unable to connect to VirtualMachineInstance because phase is Scheduling instead of Running")
	vmi := func(phase v1.VirtualMachineInstancePhase) *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Status: v1.VirtualMachineInstanceStatus{Phase: phase}}
	}
	vm := func(strategy v1.VirtualMachineRunStrategy, status v1.VirtualMachinePrintableStatus) *v1.VirtualMachine {
		return &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(strategy)},
			Status: v1.VirtualMachineStatus{PrintableStatus: status}}
	}
	tests := []struct {
		name string
		err  error
		vmi  *v1.VirtualMachineInstance
		vm   *v1.VirtualMachine
		want string // empty: fail at once
	}{
		{"forbidden", apierrors.NewForbidden(gr, "demo", errors.New("RBAC: no")), nil, nil, ""},
		{"forbidden, even while starting", apierrors.NewForbidden(gr, "demo", errors.New("RBAC: no")), vmi(v1.Pending), nil, ""},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "VirtualMachineInstance"}, "demo", field.ErrorList{}), nil, nil, ""},
		{"unauthorized", apierrors.NewUnauthorized("who are you"), nil, nil, ""},
		{"no such VMI or VM", notFound, nil, nil, ""},
		{"a stopped VM", notFound, nil, vm(v1.RunStrategyHalted, v1.VirtualMachineStatusStopped), ""},
		{"a VM that crash-loops", notFound, nil, vm(v1.RunStrategyAlways, v1.VirtualMachineStatusCrashLoopBackOff), ""},
		{"a VM being started", notFound, nil, vm(v1.RunStrategyAlways, v1.VirtualMachineStatusStarting), "VM demo is Starting"},
		{"a VM just created to run", notFound, nil, vm(v1.RunStrategyAlways, ""), "VM demo is starting"},
		{"a VM restarting between instances", notFound, nil, vm(v1.RunStrategyAlways, v1.VirtualMachineStatusStopped), "VM demo is starting"},
		{"a VM provisioning", notFound, nil, vm(v1.RunStrategyRerunOnFailure, v1.VirtualMachineStatusProvisioning), "VM demo is Provisioning"},
		{"an instance being scheduled", notRunning, vmi(v1.Scheduling), nil, "VMI demo is Scheduling"},
		{"an instance just created", notRunning, vmi(v1.VmPhaseUnset), nil, "VMI demo is being created"},
		{"an instance that ended", notRunning, vmi(v1.Succeeded), nil, ""},
		{"an instance that failed, of a VM that restarts it", notRunning, vmi(v1.Failed), vm(v1.RunStrategyAlways, v1.VirtualMachineStatusStarting), "VM demo is Starting"},
		{"an instance that failed, of a VM that does not", notRunning, vmi(v1.Failed), vm(v1.RunStrategyOnce, v1.VirtualMachineStatusStopped), ""},
		{"virt-api restarting", apierrors.NewServiceUnavailable("the server is currently unable to handle the request"), nil, nil, "the API answers 503"},
		{"the node agent unreachable", apierrors.NewGenericServerResponse(http.StatusBadGateway, "get", gr, "demo", "dial: refused", 0, true), nil, nil, "the API answers 502"},
		{"no answer at all", fmt.Errorf("dial tcp: connection refused"), nil, nil, "cannot reach the API"},
		{"a wrapped status", fmt.Errorf("open the console of default/demo: %w", notFound), nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, retry := waitFor(tt.err, tt.vmi, tt.vm)
			if tt.want == "" {
				assert.False(t, retry, "waits: %s", why)
				return
			}
			assert.True(t, retry)
			assert.Contains(t, why, tt.want)
		})
	}
}

// TestCompletion: `virtctl __complete` (what the shell scripts of `virtctl completion` call)
// lists the names of the kind a command takes, in the namespace given.
func TestCompletion(t *testing.T) {
	kv := fake.NewSimpleClientset(append(exposable(),
		&v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "mydb", Namespace: "default"}},
		&v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "team-b"}},
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "default"}})...)
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"start", ""}, []string{"mydb", "myvm"}},
		{[]string{"stop", "myv"}, []string{"myvm"}},
		{[]string{"-n", "team-b", "restart", ""}, []string{"other"}},
		{[]string{"console", ""}, []string{"myvm", "solo"}},
		{[]string{"vnc", "s"}, []string{"screenshot", "solo"}}, // and its subcommand
		{[]string{"pause", ""}, []string{"vm", "vmi"}},
		{[]string{"pause", "vmi", ""}, []string{"myvm", "solo"}},
		{[]string{"expose", "vmirs", ""}, []string{"--name", "myrs"}}, // and its required flag
		{[]string{"console", "solo", ""}, nil},
		{[]string{"create", ""}, []string{"clone", "instancetype", "preference", "vm"}},
		{[]string{"create", "vm", "--run-strategy", ""}, []string{"Always", "Halted", "Manual", "Once", "RerunOnFailure"}},
		{[]string{"create", "preference", "--cpu-topology", ""}, []string{"any", "cores", "sockets", "spread", "threads"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := runWithFakes(t, kv, kubefake.NewSimpleClientset(), append([]string{cobra.ShellCompRequestCmd}, tt.args...)...)
			require.NoError(t, err)
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if line != "" && !strings.HasPrefix(line, ":") && !strings.HasPrefix(line, "Completion ended") {
					got = append(got, strings.SplitN(line, "\t", 2)[0]) // name, then a description
				}
			}
			sort.Strings(got)
			assert.Equal(t, tt.want, got, out)
		})
	}
}
