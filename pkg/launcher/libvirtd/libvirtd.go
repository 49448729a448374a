// Package libvirtd runs the launcher's private libvirtd as the launcher's own unprivileged
// user: libvirt's session mode, where libvirtd and QEMU run as that user with no capabilities,
// every file lives below the directories the XDG variables name (all of them in the launcher
// pod's own volume, so the container's root file system stays read-only), and there are no
// cgroups, no ownership changes and no security driver to configure. QEMU's output goes to a
// plain file (no virtlogd); the taps QEMU uses were made beforehand by virt-handler and are
// owned by this user, so QEMU opens them without privileges.
package libvirtd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// QEMUConf is the qemu.conf of the launcher's libvirtd.
const QEMUConf = `# Written by virt-launcher: libvirtd in session mode inside a launcher pod.
stdio_handler = "file"
`

// LibvirtdConf is the libvirtd.conf: only the launcher talks to it, over a socket only its
// user may open, with enough workers that a slow call never blocks an event or a query.
const LibvirtdConf = `# Written by virt-launcher.
unix_sock_rw_perms = "0700"
max_clients = 20
max_workers = 20
max_client_requests = 50
log_level = 3
log_outputs = "3:stderr"
`

// Config says how to run libvirtd.
type Config struct {
	// StateDir holds everything of libvirtd's and QEMU's: the XDG configuration, cache, data
	// and runtime directories live below it. It must be private to the launcher.
	StateDir string
	// Binary is libvirtd; found on PATH when empty.
	Binary string
	// Output receives libvirtd's stdout and stderr; discarded when nil.
	Output *os.File
}

// XDG directories of the session, below StateDir.
const (
	ConfigDir  = "config"
	CacheDir   = "cache"
	DataDir    = "data"
	RuntimeDir = "runtime"
	HomeDir    = "home"
	TmpDir     = "tmp"
)

// Env is the environment of a session below stateDir: libvirtd and its clients (the launcher)
// must agree on it, so the launcher sets it for itself before it connects.
func Env(stateDir string) map[string]string {
	return map[string]string{
		"HOME":            filepath.Join(stateDir, HomeDir),
		"XDG_CONFIG_HOME": filepath.Join(stateDir, ConfigDir),
		"XDG_CACHE_HOME":  filepath.Join(stateDir, CacheDir),
		"XDG_DATA_HOME":   filepath.Join(stateDir, DataDir),
		"XDG_RUNTIME_DIR": filepath.Join(stateDir, RuntimeDir),
		"TMPDIR":          filepath.Join(stateDir, TmpDir),
	}
}

// Daemon is a running libvirtd.
type Daemon struct {
	cfg    Config
	cmd    *exec.Cmd
	socket string
	exited chan struct{}
	err    error
}

// Socket is the session's command socket below stateDir.
func Socket(stateDir string) string {
	return filepath.Join(stateDir, RuntimeDir, "libvirt", "libvirt-sock")
}

// QEMUPidFile is where libvirt records the QEMU process of a domain of the session.
func QEMUPidFile(stateDir, domain string) string {
	return filepath.Join(stateDir, RuntimeDir, "libvirt", "qemu", "run", domain+".pid")
}

// PidFile is libvirtd's own pid file.
func PidFile(stateDir string) string {
	return filepath.Join(stateDir, RuntimeDir, "libvirt", "libvirtd.pid")
}

// Start writes the configuration, starts libvirtd and waits until it answers on its socket.
// The caller must not be root: libvirtd would run its system instance instead.
func Start(ctx context.Context, cfg Config) (*Daemon, error) {
	if os.Geteuid() == 0 {
		return nil, errors.New("libvirtd must run as an unprivileged user (session mode); the launcher pod sets runAsUser")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("libvirtd: no state directory")
	}
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("libvirtd"); err != nil {
			return nil, fmt.Errorf("libvirtd: %w", err)
		}
	}
	env := Env(cfg.StateDir)
	for _, dir := range env {
		// 0700: the runtime directory must be the user's alone (libvirt checks), and nothing
		// here is anyone else's business.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	confDir := filepath.Join(env["XDG_CONFIG_HOME"], "libvirt")
	if err := os.MkdirAll(confDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(confDir, "qemu.conf"), []byte(QEMUConf), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(confDir, "libvirtd.conf"), []byte(LibvirtdConf), 0o600); err != nil {
		return nil, err
	}
	socket := Socket(cfg.StateDir)
	_ = os.Remove(socket) // a stale socket would pass the readiness check below

	cmd := exec.Command(bin)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
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
			return fmt.Errorf("libvirtd exited before it answered: %v", d.err)
		case <-ctx.Done():
			return fmt.Errorf("libvirtd did not answer on %s: %w", d.socket, ctx.Err())
		case <-tick.C:
		}
	}
}

// URI is the connection URI of this libvirtd.
func (d *Daemon) URI() string { return "qemu:///session?socket=" + d.socket }

// Exited is closed when libvirtd exits.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

// Pid is libvirtd's process id.
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
