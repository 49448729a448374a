package virtctl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// sshOptions are the flags ssh and scp share, as KubeVirt's virtctl names them.
type sshOptions struct {
	port         int
	username     string
	identityFile string
	knownHosts   string
	localSSH     bool
	localOptions []string
	// identityGiven says -i was given: the local client is told only then.
	identityGiven bool
}

func defaultSSHOptions() sshOptions {
	o := sshOptions{port: 22, username: defaultUsername()}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		o.identityFile = filepath.Join(home, ".ssh", "id_rsa")
		o.knownHosts = filepath.Join(home, ".ssh", "kubevirt_known_hosts")
	}
	return o
}

func defaultUsername() string {
	for _, env := range []string{"USER", "USERNAME", "LOGNAME"} {
		if v := os.Getenv(env); v != "" {
			return v
		}
	}
	return ""
}

func (o *sshOptions) addFlags(fs *pflag.FlagSet) {
	fs.IntVarP(&o.port, "port", "p", o.port, "the port of the guest's SSH server")
	fs.StringVarP(&o.username, "username", "l", o.username, "the user to log in as (USER@ in the target wins)")
	fs.StringVarP(&o.identityFile, "identity-file", "i", o.identityFile,
		"a private key to authenticate with; besides, the ssh-agent at $SSH_AUTH_SOCK is asked")
	fs.StringVar(&o.knownHosts, "known-hosts", o.knownHosts,
		"the known_hosts file (the built-in client adds a guest's key the first time and refuses a changed one; empty: no check)")
	fs.BoolVar(&o.localSSH, "local-ssh", o.localSSH,
		"run the local ssh/scp with this command as its ProxyCommand, instead of the built-in client")
	fs.StringArrayVarP(&o.localOptions, "local-ssh-opts", "t", o.localOptions,
		`options for the local ssh/scp, e.g. -t "-o StrictHostKeyChecking=no" (with --local-ssh)`)
}

// sshTarget is [USER@]TYPE/NAME[/NAMESPACE].
func (c *cliContext) sshTarget(arg string, o *sshOptions) (forwardTarget, error) {
	if user, rest, ok := strings.Cut(arg, "@"); ok {
		if user == "" {
			return forwardTarget{}, errors.New("expected a user name before '@'")
		}
		if rest == "" {
			return forwardTarget{}, errors.New("expected a target after '@'")
		}
		o.username, arg = user, rest
	}
	return c.forwardTargetOf(arg)
}

// hostName names the guest to ssh, and in known_hosts: KIND.NAME.NAMESPACE, as KubeVirt's
// virtctl does, so both clients share entries.
func (t forwardTarget) hostName() string {
	return t.kind() + "." + t.Name + "." + t.Namespace
}

func newSSHCommand(c *cliContext) *cobra.Command {
	o := defaultSSHOptions()
	var command string
	cmd := &cobra.Command{
		Use:   "ssh [USER@]TYPE/NAME[/NAMESPACE]",
		Short: "Open an SSH connection to a virtual machine or instance",
		Long: "Open an SSH connection to a virtual machine (vm/NAME) or instance (vmi/NAME) through a\n" +
			"port-forward. The built-in client authenticates with the identity file and the ssh-agent;\n" +
			"--local-ssh runs the local ssh with `virtctl port-forward --stdio` as its ProxyCommand.",
		Example: "  virtctl ssh root@vm/demo -c 'uname -a'\n  virtctl ssh -i ~/.ssh/demo -l debian vmi/demo/other-ns\n" +
			"  virtctl ssh --local-ssh -t '-o StrictHostKeyChecking=no' root@vm/demo",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.identityGiven = cmd.Flags().Changed("identity-file")
			target, err := c.sshTarget(args[0], &o)
			if err != nil {
				return err
			}
			if o.localSSH {
				argv := []string{target.hostName()}
				if o.username != "" {
					argv[0] = o.username + "@" + argv[0]
				}
				if command != "" {
					argv = append(argv, command)
				}
				return c.runLocal(c.localClient("ssh", target, &o, argv))
			}
			return c.nativeSSH(cmd.Context(), target, &o, command)
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&command, "command", "c", "", "a command to run in the guest instead of a shell")
	return cmd
}

// localClient is the local ssh or scp, with this virtctl as its ProxyCommand.
func (c *cliContext) localClient(program string, t forwardTarget, o *sshOptions, args []string) *exec.Cmd {
	argv := []string{"-o", "ProxyCommand=" + c.proxyCommand(t, o.port)}
	for _, opt := range o.localOptions {
		// -t "-o A=B" is one option with its value, as the local client would split it.
		argv = append(argv, strings.Fields(opt)...)
	}
	if o.identityGiven {
		argv = append(argv, "-i", o.identityFile)
	}
	cmd := exec.Command(program, append(argv, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.streams.In, c.streams.Out, c.streams.ErrOut
	return cmd
}

// proxyCommand is `virtctl port-forward --stdio=true KIND/NAME/NAMESPACE PORT`, with the
// cluster flags this virtctl was given, quoted for the shell ssh runs it with.
func (c *cliContext) proxyCommand(t forwardTarget, port int) string {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	words := []string{self}
	for _, flag := range []struct {
		name  string
		value *string
	}{
		{"kubeconfig", c.flags.KubeConfig}, {"context", c.flags.Context}, {"cluster", c.flags.ClusterName},
		{"user", c.flags.AuthInfoName}, {"server", c.flags.APIServer},
	} {
		if flag.value != nil && *flag.value != "" {
			words = append(words, "--"+flag.name+"="+*flag.value)
		}
	}
	words = append(words, "port-forward", "--stdio=true", t.kind()+"/"+t.Name+"/"+t.Namespace, strconv.Itoa(port))
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

// shellQuote quotes a word for sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runLocal runs a local client; its exit status becomes virtctl's.
func (c *cliContext) runLocal(cmd *exec.Cmd) error {
	if c.run != nil {
		return c.run(cmd)
	}
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exitCode(exit.ExitCode())
	}
	return err
}

// exitCode is an exit status to pass on without a message (a remote command's, a local
// client's).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
