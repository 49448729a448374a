package virtctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// scpArgs are the two locations of an scp: one local path, one remote [USER@]TYPE/NAME[/NS]:PATH.
type scpArgs struct {
	local      string
	target     forwardTarget
	remotePath string
	toRemote   bool
}

func (c *cliContext) parseSCPArgs(source, destination string, o *sshOptions) (scpArgs, error) {
	srcRemote, dstRemote := strings.Contains(source, ":"), strings.Contains(destination, ":")
	switch {
	case srcRemote && dstRemote:
		return scpArgs{}, fmt.Errorf("copying from a remote location to another is not supported: %q to %q", source, destination)
	case !srcRemote && !dstRemote:
		return scpArgs{}, fmt.Errorf("neither %q nor %q is a remote location (TYPE/NAME:PATH)", source, destination)
	}
	a := scpArgs{toRemote: dstRemote, local: destination}
	remote := source
	if dstRemote {
		remote, a.local = destination, source
	}
	target, remotePath, _ := strings.Cut(remote, ":")
	t, err := c.sshTarget(target, o)
	if err != nil {
		return a, err
	}
	a.target, a.remotePath = t, remotePath
	return a, nil
}

func newSCPCommand(c *cliContext) *cobra.Command {
	o := defaultSSHOptions()
	o.localSSH = true // KubeVirt's virtctl scp runs the local scp by default
	var recursive, preserve bool
	cmd := &cobra.Command{
		Use:   "scp SOURCE DESTINATION",
		Short: "Copy files to or from a virtual machine or instance",
		Long: "Copy files to or from a virtual machine (vm/NAME) or instance (vmi/NAME): one of SOURCE and\n" +
			"DESTINATION is local, the other [USER@]TYPE/NAME[/NAMESPACE]:PATH. The local scp runs with\n" +
			"`virtctl port-forward --stdio` as its ProxyCommand; --local-ssh=false copies one file with\n" +
			"the built-in client (the guest needs an scp).",
		Example: "  virtctl scp myfile.bin root@vm/demo:myfile.bin\n  virtctl scp -r root@vmi/demo/other-ns:/var/log ./logs",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.identityGiven = cmd.Flags().Changed("identity-file")
			a, err := c.parseSCPArgs(args[0], args[1], &o)
			if err != nil {
				return err
			}
			if o.localSSH {
				var argv []string
				if recursive {
					argv = append(argv, "-r")
				}
				if preserve {
					argv = append(argv, "-p")
				}
				remote := a.target.hostName() + ":" + a.remotePath
				if o.username != "" {
					remote = o.username + "@" + remote
				}
				if a.toRemote {
					argv = append(argv, a.local, remote)
				} else {
					argv = append(argv, remote, a.local)
				}
				return c.runLocal(c.localClient("scp", a.target, &o, argv))
			}
			if recursive {
				return errors.New("the built-in client copies single files; use --local-ssh for --recursive")
			}
			return c.nativeSCP(cmd.Context(), a, &o, preserve)
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "copy directories recursively")
	cmd.Flags().BoolVar(&preserve, "preserve", false, "keep modification times and modes")
	return cmd
}

// nativeSCP copies one file with the scp protocol over the built-in client: `scp -t` in the
// guest receives, `scp -f` sends.
func (c *cliContext) nativeSCP(ctx context.Context, a scpArgs, o *sshOptions, preserve bool) error {
	client, err := c.sshClient(ctx, a.target, o)
	if err != nil {
		return err
	}
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return err
	}
	defer session.Close()
	stdin, err := session.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := session.StdoutPipe()
	if err != nil {
		return err
	}
	session.Stderr = c.streams.ErrOut
	remotePath := a.remotePath
	if remotePath == "" {
		remotePath = "."
	}
	mode := "-t"
	if !a.toRemote {
		mode = "-f"
	}
	if preserve {
		mode = "-p " + mode
	}
	if err := session.Start("scp " + mode + " " + shellQuote(remotePath)); err != nil {
		return err
	}
	r := bufio.NewReader(stdout)
	if a.toRemote {
		err = scpSend(stdin, r, a.local)
	} else {
		err = scpReceive(stdin, r, a.local)
	}
	stdin.Close()
	if err != nil {
		return err
	}
	return sessionError(session.Wait())
}

// scpAck reads the receiver's answer: 0, or 1/2 and a message.
func scpAck(r *bufio.Reader) error {
	b, err := r.ReadByte()
	if err != nil {
		return err
	}
	if b == 0 {
		return nil
	}
	msg, _ := r.ReadString('\n')
	return fmt.Errorf("scp in the guest: %s", strings.TrimSpace(msg))
}

func scpSend(w io.Writer, r *bufio.Reader, local string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file; use --local-ssh with --recursive", local)
	}
	if err := scpAck(r); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "C%04o %d %s\n", fi.Mode().Perm(), fi.Size(), filepath.Base(local)); err != nil {
		return err
	}
	if err := scpAck(r); err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		return err
	}
	if _, err := w.Write([]byte{0}); err != nil {
		return err
	}
	return scpAck(r)
}

func scpReceive(w io.Writer, r *bufio.Reader, local string) error {
	if _, err := w.Write([]byte{0}); err != nil {
		return err
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("scp in the guest: %w", err)
		}
		switch line[0] {
		case 'T': // times (--preserve): acknowledged, not applied
			if _, err := w.Write([]byte{0}); err != nil {
				return err
			}
			continue
		case 1, 2:
			return fmt.Errorf("scp in the guest: %s", strings.TrimSpace(line[1:]))
		case 'C':
		default:
			return fmt.Errorf("scp in the guest sent %q; use --local-ssh for directories", strings.TrimSpace(line))
		}
		fields := strings.SplitN(strings.TrimSpace(line[1:]), " ", 3)
		if len(fields) != 3 {
			return fmt.Errorf("scp in the guest sent %q", strings.TrimSpace(line))
		}
		perm, err1 := strconv.ParseUint(fields[0], 8, 32)
		size, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil || size < 0 {
			return fmt.Errorf("scp in the guest sent %q", strings.TrimSpace(line))
		}
		dest := local
		if fi, err := os.Stat(local); err == nil && fi.IsDir() {
			dest = filepath.Join(local, filepath.Base(fields[2]))
		}
		f, err := os.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, os.FileMode(perm)&0o777)
		if err != nil {
			return err
		}
		if _, err := w.Write([]byte{0}); err != nil {
			f.Close()
			return err
		}
		_, err = io.CopyN(f, r, size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := scpAck(r); err != nil {
			return err
		}
		_, err = w.Write([]byte{0})
		return err
	}
}
