package virtctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
	"golang.org/x/term"
)

// sshClient connects the built-in SSH client to the target's port through a port-forward.
func (c *cliContext) sshClient(ctx context.Context, t forwardTarget, o *sshOptions) (*ssh.Client, error) {
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	auth, err := c.sshAuth(o)
	if err != nil {
		return nil, err
	}
	hostKeys, err := c.hostKeyCallback(o.knownHosts)
	if err != nil {
		return nil, err
	}
	conn, err := dialForward(ctx, cfg, t, o.port, "tcp")
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(t.hostName(), strconv.Itoa(o.port))
	sshConn, chans, reqs, err := ssh.NewClientConn(conn, addr, &ssh.ClientConfig{
		User: o.username, Auth: auth, HostKeyCallback: hostKeys})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh to %s: %w", addr, err)
	}
	return ssh.NewClient(sshConn, chans, reqs), nil
}

// sshAuth offers the identity file's key (when given, or present at its default place) and
// the ssh-agent's keys.
func (c *cliContext) sshAuth(o *sshOptions) ([]ssh.AuthMethod, error) {
	var methods []ssh.AuthMethod
	if o.identityFile != "" {
		pem, err := os.ReadFile(o.identityFile)
		switch {
		case err == nil:
			signer, err := c.parseKey(o.identityFile, pem)
			if err != nil {
				return nil, err
			}
			methods = append(methods, ssh.PublicKeys(signer))
		case o.identityGiven || !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("identity file: %w", err)
		}
	}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		if conn, err := net.Dial("unix", sock); err == nil {
			methods = append(methods, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
		} else {
			fmt.Fprintf(c.streams.ErrOut, "no ssh-agent at %s: %v\n", sock, err)
		}
	}
	if len(methods) == 0 {
		return nil, errors.New("no key to authenticate with: give one with -i, or run an ssh-agent")
	}
	return methods, nil
}

// parseKey reads a private key, asking for its passphrase on a terminal when it has one.
func (c *cliContext) parseKey(path string, pem []byte) (ssh.Signer, error) {
	signer, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if !errors.As(err, &missing) {
		if err != nil {
			return nil, fmt.Errorf("identity file %s: %w", path, err)
		}
		return signer, nil
	}
	in, ok := c.streams.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return nil, fmt.Errorf("identity file %s has a passphrase and there is no terminal to ask it on", path)
	}
	fmt.Fprintf(c.streams.ErrOut, "Enter passphrase for key '%s': ", path)
	pass, err := term.ReadPassword(int(in.Fd()))
	fmt.Fprintln(c.streams.ErrOut)
	if err != nil {
		return nil, err
	}
	return ssh.ParsePrivateKeyWithPassphrase(pem, pass)
}

// hostKeyCallback checks the guest's host key against the known_hosts file: a changed key
// is refused, a host seen the first time is added (trust on first use, as ssh's
// StrictHostKeyChecking=accept-new). Without a file, nothing is checked, with a warning.
func (c *cliContext) hostKeyCallback(file string) (ssh.HostKeyCallback, error) {
	if file == "" {
		fmt.Fprintln(c.streams.ErrOut, "Warning: the guest's host key is not checked; give --known-hosts to check it")
		return ssh.InsecureIgnoreHostKey(), nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("known hosts: %w", err)
	}
	f.Close()
	known, err := knownhosts.New(file)
	if err != nil {
		return nil, fmt.Errorf("known hosts %s: %w", file, err)
	}
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := known(host, remote, key)
		var keyErr *knownhosts.KeyError
		if !errors.As(err, &keyErr) || len(keyErr.Want) > 0 {
			if err != nil && keyErr != nil {
				return fmt.Errorf("the host key of %s has changed (%s, line %d of %s has another): %w",
					host, ssh.FingerprintSHA256(key), keyErr.Want[0].Line, file, err)
			}
			return err
		}
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := fmt.Fprintln(f, knownhosts.Line([]string{knownhosts.Normalize(host)}, key)); err != nil {
			return err
		}
		fmt.Fprintf(c.streams.ErrOut, "Warning: permanently added %s (%s) to %s\n", host, ssh.FingerprintSHA256(key), file)
		return nil
	}, nil
}

// nativeSSH runs command in the guest, or a shell when command is empty (with a terminal
// when standard input is one).
func (c *cliContext) nativeSSH(ctx context.Context, t forwardTarget, o *sshOptions, command string) error {
	client, err := c.sshClient(ctx, t, o)
	if err != nil {
		return err
	}
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return err
	}
	defer session.Close()
	session.Stdin, session.Stdout, session.Stderr = c.streams.In, c.streams.Out, c.streams.ErrOut
	if command != "" {
		return sessionError(session.Run(command))
	}
	if in, ok := c.streams.In.(*os.File); ok && term.IsTerminal(int(in.Fd())) {
		width, height, err := term.GetSize(int(in.Fd()))
		if err != nil {
			width, height = 80, 24
		}
		termType := os.Getenv("TERM")
		if termType == "" {
			termType = "xterm"
		}
		if err := session.RequestPty(termType, height, width, ssh.TerminalModes{ssh.ECHO: 1}); err != nil {
			return err
		}
		state, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return err
		}
		defer term.Restore(int(in.Fd()), state)
		// The guest's terminal follows the local one's size.
		resized := make(chan os.Signal, 1)
		signal.Notify(resized, syscall.SIGWINCH)
		defer func() { signal.Stop(resized); close(resized) }()
		go func() {
			for range resized {
				if w, h, err := term.GetSize(int(in.Fd())); err == nil {
					_ = session.WindowChange(h, w)
				}
			}
		}()
	}
	if err := session.Shell(); err != nil {
		return err
	}
	return sessionError(session.Wait())
}

// sessionError passes a remote command's exit status on as virtctl's.
func sessionError(err error) error {
	var exit *ssh.ExitError
	if errors.As(err, &exit) {
		return exitCode(exit.ExitStatus())
	}
	var missing *ssh.ExitMissingError
	if errors.As(err, &missing) || errors.Is(err, io.EOF) {
		return errors.New("the guest closed the session without an exit status")
	}
	return err
}
