package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Step runs f, printing "[prefix] name ... (Ns)" around it, and names the step in its error.
func Step(prefix, name string, f func() error) error {
	start := time.Now()
	fmt.Fprintf(os.Stderr, "[%s] %s ...", prefix, name)
	if err := f(); err != nil {
		fmt.Fprintf(os.Stderr, " FAILED\n")
		return fmt.Errorf("[%s] %s: %w", prefix, name, err)
	}
	fmt.Fprintf(os.Stderr, " (%.1fs)\n", time.Since(start).Seconds())
	return nil
}

// Logf prints a progress line.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// Daemon is a long-running process of the cluster: on the host, or in a node's namespaces.
type Daemon struct {
	// Name is unique in the cluster: "kube-apiserver", "kubelet@hangar-node-2".
	Name   string
	Binary string
	Args   []string
	// Node, when set, runs the daemon in the node's network and mount namespaces.
	Node *Node
	// LogFile receives stdout and stderr.
	LogFile string
	// Env is added to this tool's environment.
	Env []string
}

func (s *Settings) pidFile(name string) string {
	return filepath.Join(s.PidDir(), strings.ReplaceAll(name, "@", "-")+".pid")
}

// Pid is the pid of a running daemon started by the cluster, or 0. A pid counts only while
// its executable is still the one started, so a recycled pid never makes us signal a stranger.
func (s *Settings) Pid(name, binary string) int {
	b, err := os.ReadFile(s.pidFile(name))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || strings.TrimSuffix(exe, " (deleted)") != binary || !alive(pid) {
		return 0
	}
	return pid
}

// Start starts d unless it runs. The daemon gets a session of its own and no descriptor
// beyond stdio (a caller's lock would otherwise be held for ever), and outlives this tool.
func (s *Settings) Start(d Daemon) error {
	if s.Pid(d.Name, d.Binary) != 0 {
		return nil
	}
	inheritOnlyStdio.Do(closeInheritedOnExec)
	argv := append([]string{d.Binary}, d.Args...)
	if d.Node != nil {
		// nsenter enters the namespaces and execs the daemon: the pid stays the daemon's.
		argv = append([]string{"nsenter", "--net=" + d.Node.NetnsPath(), "--mount=" + d.Node.MountNamespace(), "--"}, argv...)
	}
	if err := os.MkdirAll(filepath.Dir(d.LogFile), 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(d.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "\n===== %s start %s =====\n", time.Now().Format(time.RFC3339), d.Name)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), d.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", d.Name, err)
	}
	pid := cmd.Process.Pid
	if err := os.MkdirAll(s.PidDir(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(s.pidFile(d.Name), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return err
	}
	// Reap it if it dies while this tool runs; afterwards init does.
	go func() { _ = cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Pid(d.Name, d.Binary) == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not start:\n%s", d.Name, tail(d.LogFile, 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

var inheritOnlyStdio sync.Once

// closeInheritedOnExec marks every descriptor this process inherited beyond stdio
// close-on-exec. Go opens its own so, but not what a parent left open: a lock held by the
// caller (flock FILE hack/cluster/up.sh) would pass to every daemon and outlive the caller.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// Stop sends SIGTERM to a running daemon and SIGKILL after grace; it says whether one ran.
func (s *Settings) Stop(name, binary string, grace time.Duration) (bool, error) {
	defer os.Remove(s.pidFile(name))
	pid := s.Pid(name, binary)
	if pid == 0 {
		return false, nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for alive(pid) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return true, nil
}

// alive: a zombie counts as gone (its parent, this tool or init, may take its time).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses; the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// WaitFor polls ok every 200 ms until it holds or timeout passes.
func WaitFor(timeout time.Duration, what string, ok func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ok()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tail is the end of a log file, for error messages.
func tail(file string, lines int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// run runs a command, failing with its output.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// output runs a command and returns its standard output.
func output(name string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

var errNotReady = errors.New("not ready")
