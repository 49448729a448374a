// Package virtctl is the command line for the imperative side of Hangar (and KubeVirt):
// start, stop, restart, pause, unpause, soft-reboot, reset, migrate, migrate-cancel, console,
// vnc, port-forward, ssh, scp, expose, version, the guest agent's guestosinfo, userlist and
// fslist, and create vm|instancetype|preference, which print manifests without touching the
// cluster. It speaks subresources.kubevirt.io/v1, so it works against KubeVirt clusters too.
package virtctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hangarvm/hangar/pkg/generated/clientset/versioned"
	exportclient "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned"
)

// Streams are the command's standard input, output and error.
type Streams = genericiooptions.IOStreams

// cliContext is what every subcommand needs: where the cluster is and which namespace to use.
type cliContext struct {
	flags   *genericclioptions.ConfigFlags
	streams Streams
	// kubevirt and kubernetes, when set, are the clients to use instead of ones made from the
	// flags (unit tests set fake clientsets).
	kubevirt   versioned.Interface
	kubernetes kubernetes.Interface
	dynamic    dynamic.Interface // tests set it; else made from the flags
	// run runs a local client (ssh, scp); nil: exec it. Tests see the command line.
	run func(*exec.Cmd) error
}

func (c *cliContext) restConfig() (*rest.Config, error) {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "virtctl"
	return cfg, nil
}

func (c *cliContext) namespace() (string, error) {
	ns, _, err := c.flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// target is the cluster and the namespace a command works in.
func (c *cliContext) target() (*rest.Config, string, error) {
	cfg, err := c.restConfig()
	if err != nil {
		return nil, "", err
	}
	ns, err := c.namespace()
	return cfg, ns, err
}

// clients returns the kubevirt.io clientset, the actions client and the namespace.
func (c *cliContext) clients() (versioned.Interface, *actions, string, error) {
	cfg, ns, err := c.target()
	if err != nil {
		return nil, nil, "", err
	}
	kv := c.kubevirt
	if kv == nil {
		if kv, err = versioned.NewForConfig(cfg); err != nil {
			return nil, nil, "", err
		}
	}
	acts, err := newActions(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	return kv, acts, ns, nil
}

func (c *cliContext) kube() (kubernetes.Interface, string, error) {
	cfg, ns, err := c.target()
	if err != nil {
		return nil, "", err
	}
	if c.kubernetes != nil {
		return c.kubernetes, ns, nil
	}
	kube, err := kubernetes.NewForConfig(cfg)
	return kube, ns, err
}

// exportClient is the export.kubevirt.io clientset.
func (c *cliContext) exportClient() (exportclient.Interface, string, error) {
	cfg, ns, err := c.target()
	if err != nil {
		return nil, "", err
	}
	e, err := exportclient.NewForConfig(cfg)
	return e, ns, err
}

// dynamicClient reads what Hangar has no types for (CDI's DataVolumes).
func (c *cliContext) dynamicClient() (dynamic.Interface, string, error) {
	cfg, ns, err := c.target()
	if err != nil {
		return nil, "", err
	}
	if c.dynamic != nil {
		return c.dynamic, ns, nil
	}
	d, err := dynamic.NewForConfig(cfg)
	return d, ns, err
}

// NewCommand returns virtctl's root command. Called as kubectl-virt (a kubectl plugin), it
// names itself "kubectl virt".
func NewCommand(streams Streams) *cobra.Command {
	return newCommand(&cliContext{flags: genericclioptions.NewConfigFlags(true), streams: streams})
}

// newCommand builds the command tree on c. The global flags are kubectl's own
// (genericclioptions), as KubeVirt's virtctl takes them: --kubeconfig, -n/--namespace,
// --context, --cluster, --user, --as, --as-group, --as-uid, -s/--server, --token, ...
func newCommand(c *cliContext) *cobra.Command {
	use := "virtctl"
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-virt") {
		use = "kubectl virt"
	}
	root := &cobra.Command{
		Use:           use,
		Short:         "Control virtual machines: start, stop, consoles and more",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	c.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newStartCommand(c), newStopCommand(c), newRestartCommand(c),
		newPauseCommand(c, "pause"), newPauseCommand(c, "unpause"), newSoftRebootCommand(c), newResetCommand(c),
		newAddVolumeCommand(c), newRemoveVolumeCommand(c), newMemoryDumpCommand(c),
		newMigrateCommand(c), newMigrateCancelCommand(c),
		newConsoleCommand(c), newVNCCommand(c), newExposeCommand(c), newVersionCommand(c),
		newPortForwardCommand(c), newSSHCommand(c), newSCPCommand(c), newVMExportCommand(c),
		newGuestAgentCommand(c, "guestosinfo", "guestosinfo", "Show what the guest agent reports of a running instance's guest"),
		newGuestAgentCommand(c, "userlist", "userlist", "List the users logged in to a running instance's guest"),
		newGuestAgentCommand(c, "fslist", "filesystemlist", "List the file systems of a running instance's guest"),
		newCreateCommand(c),
	)
	return root
}

// Main runs virtctl and returns the process's exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := NewCommand(Streams{In: stdin, Out: stdout, ErrOut: stderr})
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.Execute(); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code) // the remote command's or local client's own status
		}
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	return 0
}
