package framework

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	virtapi "github.com/hangarvm/hangar/cmd/virt-api/app"
	"github.com/hangarvm/hangar/pkg/etcd"
)

// A VirtAPI with a Binary runs as a process of its own, as deployed: its memory and CPU are
// its own, apart from the test's (benchmarks measure them). Its options become flags, and
// its etcd runs in the test process instead of inside it.

// Pid is the virt-api process's id, or 0 when virt-api runs in-process.
func (s *VirtAPI) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// URL is where virt-api serves, directly (not through kube-apiserver).
func (s *VirtAPI) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", s.port) }

// startProcess starts the binary with o as flags, on the port of listener (closed here so the
// process can bind it). o must not have been completed yet: flags are what the command line
// would say.
func (s *VirtAPI) startProcess(o *virtapi.Options, listener net.Listener) error {
	if o.EmbeddedEtcdDir != "" {
		// As kube-apiserver's etcd in these tests (StartKubeAPIServer): in the test process,
		// syncing to disk only with EtcdFsync, so that a benchmark compares like with like.
		server, err := etcd.Start(etcd.Config{Dir: o.EmbeddedEtcdDir, UnsafeNoFsync: !EtcdFsync})
		if err != nil {
			listener.Close()
			return err
		}
		s.etcd = server
		o.EmbeddedEtcdDir = ""
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{server.ClientURL}
	}
	o.RecommendedOptions.SecureServing.Listener = nil
	o.RecommendedOptions.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	args, err := optionFlags(o)
	if err != nil {
		listener.Close()
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(s.Dir, "virt-api.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		listener.Close()
		return err
	}
	cmd := exec.Command(s.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The server must not outlive a test binary killed by a timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	listener.Close()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", s.Binary, err)
	}
	s.cmd, s.done = cmd, make(chan error, 1)
	go func() { s.done <- fmt.Errorf("%v (log in %s)", cmd.Wait(), logFile.Name()); logFile.Close() }()
	return nil
}

// stopProcess stops the process (SIGTERM, then SIGKILL after a while) and its etcd.
func (s *VirtAPI) stopProcess() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	if s.etcd != nil {
		s.etcd.Stop()
		s.etcd = nil
	}
}

// optionFlags is the command line that gives a fresh virt-api the options o: every flag whose
// value differs from its default. An option that is no flag is lost, which the caller
// must not rely on.
func optionFlags(o *virtapi.Options) ([]string, error) {
	defaults := pflag.NewFlagSet("defaults", pflag.ContinueOnError)
	virtapi.NewOptions().AddFlags(defaults)
	current := pflag.NewFlagSet("current", pflag.ContinueOnError)
	o.AddFlags(current)
	var args []string
	var missing []string
	current.VisitAll(func(f *pflag.Flag) {
		def := defaults.Lookup(f.Name)
		if def == nil {
			missing = append(missing, f.Name)
			return
		}
		if value := flagValue(f); value != flagValue(def) {
			args = append(args, "--"+f.Name+"="+value)
		}
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("flags without a default: %v", missing)
	}
	return args, nil
}

// flagValue is a flag's value as its Set accepts it (a list as comma-separated values).
func flagValue(f *pflag.Flag) string {
	if list, ok := f.Value.(pflag.SliceValue); ok {
		return strings.Join(list.GetSlice(), ",")
	}
	return f.Value.String()
}
