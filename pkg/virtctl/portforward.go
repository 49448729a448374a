package virtctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
)

// forwardTarget is what a port-forward, ssh or scp reaches: a VM's instance or an instance.
type forwardTarget struct {
	// Resource is virtualmachines or virtualmachineinstances.
	Resource  string
	Name      string
	Namespace string
}

// kind is the target's short kind, as ssh host names and ProxyCommands write it.
func (t forwardTarget) kind() string {
	if t.Resource == "virtualmachines" {
		return "vm"
	}
	return "vmi"
}

// parseForwardTarget reads KubeVirt's TYPE/NAME[/NAMESPACE]; TYPE is vm or vmi, in any of
// their spellings (vms, virtualmachine, virtualmachineinstances, ...).
func parseForwardTarget(arg string) (forwardTarget, error) {
	parts := strings.Split(arg, "/")
	var t forwardTarget
	switch len(parts) {
	case 2:
	case 3:
		if t.Namespace = parts[2]; t.Namespace == "" {
			return t, errors.New("namespace cannot be empty")
		}
	case 1:
		return t, fmt.Errorf("target %q must be TYPE/NAME[/NAMESPACE], TYPE vm or vmi", arg)
	default:
		return t, fmt.Errorf("target %q has more than two '/'", arg)
	}
	switch strings.ToLower(parts[0]) {
	case "vm", "vms", "virtualmachine", "virtualmachines":
		t.Resource = "virtualmachines"
	case "vmi", "vmis", "virtualmachineinstance", "virtualmachineinstances":
		t.Resource = "virtualmachineinstances"
	default:
		return t, fmt.Errorf("unsupported resource type %q: vm or vmi", parts[0])
	}
	if t.Name = parts[1]; t.Name == "" {
		return t, errors.New("name cannot be empty")
	}
	return t, nil
}

// forwardedPort is one [protocol/]local[:remote] argument.
type forwardedPort struct {
	Local, Remote int
	Protocol      string
}

func parseForwardedPort(arg string) (forwardedPort, error) {
	p := forwardedPort{Protocol: "tcp"}
	ports := arg
	if proto, rest, ok := strings.Cut(arg, "/"); ok {
		p.Protocol, ports = strings.ToLower(proto), rest
	}
	if p.Protocol != "tcp" && p.Protocol != "udp" {
		return p, fmt.Errorf("port %q: protocol %q is neither tcp nor udp", arg, p.Protocol)
	}
	local, remote, hasRemote := strings.Cut(ports, ":")
	var err error
	if p.Local, err = parsePort(local, true); err != nil {
		return p, fmt.Errorf("port %q: local port: %w", arg, err)
	}
	p.Remote = p.Local
	if hasRemote {
		if p.Remote, err = parsePort(remote, false); err != nil {
			return p, fmt.Errorf("port %q: remote port: %w", arg, err)
		}
	} else if p.Local == 0 {
		return p, fmt.Errorf("port %q: a remote port is needed", arg)
	}
	return p, nil
}

// parsePort reads a port; the local one may be 0 (any free port), as kubectl's ":remote".
func parsePort(s string, local bool) (int, error) {
	if s == "" && local {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < 0 || n > 65535 || (n == 0 && !local) {
		return 0, fmt.Errorf("%d is not a port", n)
	}
	return n, nil
}

type portForwardOptions struct {
	address string
	stdio   bool
}

func newPortForwardCommand(c *cliContext) *cobra.Command {
	o := portForwardOptions{address: "127.0.0.1"}
	cmd := &cobra.Command{
		Use:   "port-forward TYPE/NAME[/NAMESPACE] [PROTOCOL/]LOCAL[:REMOTE]...",
		Short: "Forward local ports to a virtual machine or instance",
		Long: "Forward local ports to a virtual machine (vm/NAME) or instance (vmi/NAME) through the API\n" +
			"server, as KubeVirt's virtctl does. PROTOCOL is tcp (the default) or udp; REMOTE is LOCAL\n" +
			"when left out, and LOCAL may be empty (:REMOTE) for any free port. With --stdio, one\n" +
			"port's connection is standard input and output (an ssh ProxyCommand).",
		Example: "  virtctl port-forward vm/demo 2222:22\n  virtctl port-forward vmi/demo/other-ns udp/5353:53\n" +
			"  ssh -o 'ProxyCommand=virtctl port-forward --stdio=true vm/demo/default 22' root@vm.demo.default",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, ports, err := c.forwardArgs(args[0], args[1:])
			if err != nil {
				return err
			}
			cfg, err := c.restConfig()
			if err != nil {
				return err
			}
			if o.stdio {
				if len(ports) != 1 {
					return errors.New("--stdio forwards exactly one port")
				}
				return forwardStdio(cmd.Context(), cfg, target, ports[0], c.streams.In, c.streams.Out)
			}
			return forwardPorts(cmd.Context(), cfg, target, ports, o.address, c.streams.ErrOut)
		},
	}
	cmd.Flags().StringVar(&o.address, "address", o.address, "the local address to listen on")
	cmd.Flags().BoolVar(&o.stdio, "stdio", o.stdio, "forward standard input and output to the one port given, instead of listening")
	return cmd
}

// forwardArgs parses a port-forward's target and ports; the namespace defaults to the
// context's.
func (c *cliContext) forwardArgs(targetArg string, portArgs []string) (forwardTarget, []forwardedPort, error) {
	target, err := c.forwardTargetOf(targetArg)
	if err != nil {
		return target, nil, err
	}
	var ports []forwardedPort
	for _, arg := range portArgs {
		p, err := parseForwardedPort(arg)
		if err != nil {
			return target, nil, err
		}
		ports = append(ports, p)
	}
	return target, ports, nil
}

func (c *cliContext) forwardTargetOf(arg string) (forwardTarget, error) {
	target, err := parseForwardTarget(arg)
	if err != nil {
		return target, err
	}
	if target.Namespace == "" {
		if target.Namespace, err = c.namespace(); err != nil {
			return target, err
		}
	}
	return target, nil
}

// dialForward opens one forwarded connection (or UDP flow) to port/protocol of the target.
func dialForward(ctx context.Context, cfg *rest.Config, t forwardTarget, port int, protocol string) (*wsConn, error) {
	ws, err := openResourceStream(ctx, cfg, t.Namespace, t.Resource, t.Name, fmt.Sprintf("portforward/%d/%s", port, protocol))
	if err != nil {
		return nil, fmt.Errorf("can't access %s/%s/%s: %w", t.kind(), t.Name, t.Namespace, err)
	}
	return newWSConn(ws), nil
}

// forwardStdio joins in and out to one connection to the port until the far end closes it
// (the end of in ends nothing: what the guest still sends is written out).
func forwardStdio(ctx context.Context, cfg *rest.Config, t forwardTarget, p forwardedPort, in io.Reader, out io.Writer) error {
	conn, err := dialForward(ctx, cfg, t, p.Remote, p.Protocol)
	if err != nil {
		return err
	}
	defer conn.Close()
	go func() { _, _ = io.Copy(conn, in) }()
	if _, err := io.Copy(out, conn); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// forwardPorts listens on address for each port and forwards until ctx ends.
func forwardPorts(ctx context.Context, cfg *rest.Config, t forwardTarget, ports []forwardedPort, address string, log io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(ports))
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for _, p := range ports {
		local := net.JoinHostPort(address, strconv.Itoa(p.Local))
		switch p.Protocol {
		case "udp":
			pc, err := net.ListenPacket("udp", local)
			if err != nil {
				return err
			}
			closers = append(closers, pc)
			fmt.Fprintf(log, "Forwarding from %s (udp) to %s/%s:%d\n", pc.LocalAddr(), t.kind(), t.Name, p.Remote)
			go func() { errs <- forwardUDP(ctx, cfg, t, p, pc.(*net.UDPConn), log) }()
		default:
			l, err := net.Listen("tcp", local)
			if err != nil {
				return err
			}
			closers = append(closers, l)
			fmt.Fprintf(log, "Forwarding from %s to %s/%s:%d\n", l.Addr(), t.kind(), t.Name, p.Remote)
			go func() { errs <- forwardTCP(ctx, cfg, t, p, l, log) }()
		}
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}

// forwardTCP forwards each connection accepted on l over a connection of its own.
func forwardTCP(ctx context.Context, cfg *rest.Config, t forwardTarget, p forwardedPort, l net.Listener, log io.Writer) error {
	for {
		local, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			defer local.Close()
			remote, err := dialForward(ctx, cfg, t, p.Remote, "tcp")
			if err != nil {
				fmt.Fprintf(log, "error forwarding %d: %v\n", p.Local, err)
				return
			}
			defer remote.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(remote, local); done <- struct{}{} }()
			go func() { _, _ = io.Copy(local, remote); done <- struct{}{} }()
			<-done
		}()
	}
}

// forwardUDP forwards the datagrams of each local client (source address) over a flow of
// its own, a datagram a message.
func forwardUDP(ctx context.Context, cfg *rest.Config, t forwardTarget, p forwardedPort, pc *net.UDPConn, log io.Writer) error {
	var mu sync.Mutex
	flows := map[string]*wsConn{}
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFromUDP(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		mu.Lock()
		flow, ok := flows[from.String()]
		if !ok {
			flow, err = dialForward(ctx, cfg, t, p.Remote, "udp")
			if err != nil {
				mu.Unlock()
				fmt.Fprintf(log, "error forwarding udp %d: %v\n", p.Local, err)
				continue
			}
			flows[from.String()] = flow
			go func(client *net.UDPAddr) {
				defer func() {
					mu.Lock()
					delete(flows, client.String())
					mu.Unlock()
					flow.Close()
				}()
				for {
					data, err := flow.readMessage()
					if err != nil {
						return
					}
					if _, err := pc.WriteToUDP(data, client); err != nil {
						return
					}
				}
			}(from)
		}
		mu.Unlock()
		if _, err := flow.Write(buf[:n]); err != nil {
			fmt.Fprintf(log, "error forwarding udp %d: %v\n", p.Local, err)
		}
	}
}
