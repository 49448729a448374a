// Package libvirtd runs the launcher's private libvirtd, configured for a container: QEMU as
// root, no file ownership changes, no per-domain mount namespace, no cgroups, no security
// driver, QEMU's output to a plain file (shared/ENVIRONMENT.md has the measured reasons).
package libvirtd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// QEMUConf is the qemu.conf of the launcher's libvirtd.
const QEMUConf = `# Written by virt-launcher: libvirtd inside a container.
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
namespaces = [ ]
cgroup_controllers = [ ]
security_driver = "none"
stdio_handler = "file"
`

// LibvirtdConf is the libvirtd.conf: only the launcher talks to it, over a root-only socket
// (no polkit here), with enough workers that a slow call never blocks an event or a query.
const LibvirtdConf = `# Written by virt-launcher.
unix_sock_group = "root"
unix_sock_ro_perms = "0700"
unix_sock_rw_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
max_clients = 20
max_workers = 20
max_client_requests = 50
log_level = 3
log_outputs = "3:stderr 3:file:/var/log/libvirt/libvirtd.log"
`

// The directories libvirtd (as root, in system mode) hard-codes.
var systemDirs = []struct{ name, path string }{
	{"etc", "/etc/libvirt"},
	{"run", "/run/libvirt"},
	{"lib", "/var/lib/libvirt"},
	{"log", "/var/log/libvirt"},
	{"cache", "/var/cache/libvirt"},
}

// Config says how to run libvirtd.
type Config struct {
	// PrivateRoot, when set, keeps everything of libvirtd under this directory: libvirtd runs
	// in a mount namespace of its own (unshare) where <PrivateRoot>/{etc,run,lib,log,cache}
	// are bound over libvirt's system directories. For tests and development on a host that
	// may run other libvirtds. Empty: libvirtd uses the system directories, which inside a
	// launcher container are the container's own.
	PrivateRoot string
	// Binary is libvirtd; found on PATH when empty.
	Binary string
	// Output receives libvirtd's stdout and stderr; discarded when nil.
	Output *os.File
}

// Daemon is a running libvirtd.
type Daemon struct {
	cfg    Config
	cmd    *exec.Cmd
	socket string
	exited chan struct{}
	err    error
}

// Dir is where libvirtd's directory name ("run", "log", ...) is seen from outside.
func (c Config) Dir(name string) string {
	for _, d := range systemDirs {
		if d.name == name {
			if c.PrivateRoot != "" {
				return filepath.Join(c.PrivateRoot, name)
			}
			return d.path
		}
	}
	panic("unknown libvirt directory " + name)
}

// Start writes the configuration, starts libvirtd and waits until it answers on its socket.
func Start(ctx context.Context, cfg Config) (*Daemon, error) {
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("libvirtd"); err != nil {
			return nil, fmt.Errorf("libvirtd: %w", err)
		}
	}
	for _, d := range systemDirs {
		if err := os.MkdirAll(cfg.Dir(d.name), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir("etc"), "qemu.conf"), []byte(QEMUConf), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir("etc"), "libvirtd.conf"), []byte(LibvirtdConf), 0o644); err != nil {
		return nil, err
	}
	socket := filepath.Join(cfg.Dir("run"), "libvirt-sock")
	_ = os.Remove(socket) // a stale socket would pass the readiness check below

	var cmd *exec.Cmd
	if cfg.PrivateRoot == "" {
		cmd = exec.Command(bin, "--config", "/etc/libvirt/libvirtd.conf")
	} else {
		var script strings.Builder
		for _, d := range systemDirs {
			fmt.Fprintf(&script, "mkdir -p %s && mount --bind %s %s && ", d.path, shellQuote(cfg.Dir(d.name)), d.path)
		}
		script.WriteString(`exec "$0" --config /etc/libvirt/libvirtd.conf`)
		cmd = exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script.String(), bin)
	}
	if cfg.Output != nil {
		cmd.Stdout, cmd.Stderr = cfg.Output, cfg.Output
	}
	// Its own process group: a terminal's ^C reaches the launcher, which stops the guest
	// first and libvirtd last.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start libvirtd: %w", err)
	}
	d := &Daemon{cfg: cfg, cmd: cmd, socket: socket, exited: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.exited)
	}()
	if err := d.waitReady(ctx); err != nil {
		d.Stop(2 * time.Second)
		return nil, err
	}
	return d, nil
}

func (d *Daemon) waitReady(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.Dial("unix", d.socket); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("libvirtd exited before it answered: %v (log: %s)", d.err, filepath.Join(d.cfg.Dir("log"), "libvirtd.log"))
		case <-ctx.Done():
			return fmt.Errorf("libvirtd did not answer on %s: %w", d.socket, ctx.Err())
		case <-tick.C:
		}
	}
}

// URI is the connection URI of this libvirtd.
func (d *Daemon) URI() string { return "qemu:///system?socket=" + d.socket }

// Exited is closed when libvirtd exits.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

// Pid is libvirtd's process id (for a private root, the unshare'd process, which execs it).
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// Stop sends SIGTERM, and SIGKILL after grace.
func (d *Daemon) Stop(grace time.Duration) error {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(grace):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	var exitErr *exec.ExitError
	if d.err != nil && !errors.As(d.err, &exitErr) {
		return d.err
	}
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
