package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// What the cluster changes on the host outside its directory, recorded at the first up of a
// cluster's life and put back by down: kernel-wide sysctls the kubelet sets (the net.* ones
// live in the nodes' network namespaces and go with them), and the mount points the nodes'
// private directories are bound onto, where they did not exist before.

// recordedSysctls are kernel-wide: a node's kubelet (protectKernelDefaults off) sets them on
// the one kernel all nodes share.
var recordedSysctls = []string{
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
}

// hostPaths are the host paths the cluster needs to exist: the bind targets of the nodes'
// private directories, and ip netns' directory.
func (s *Settings) hostPaths() []string {
	var paths []string
	for _, b := range s.Node(1).PrivateBinds() {
		paths = append(paths, b.Target)
	}
	return append(paths, "/run/netns")
}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// RecordHostState saves, once per cluster lifetime, what down must restore, and makes the
// host paths the nodes need.
func (s *Settings) RecordHostState() error {
	dir := s.HostStateDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sysctls := filepath.Join(dir, "sysctls")
	if !exists(sysctls) {
		var b strings.Builder
		for _, key := range recordedSysctls {
			if v, err := os.ReadFile(sysctlPath(key)); err == nil {
				fmt.Fprintf(&b, "%s=%s\n", key, strings.TrimSpace(string(v)))
			}
		}
		if err := writeFileAtomic(sysctls, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	created := filepath.Join(dir, "created-paths")
	if !exists(created) {
		var b strings.Builder
		for _, p := range s.hostPaths() {
			if !exists(p) {
				b.WriteString(p + "\n")
			}
		}
		if err := writeFileAtomic(created, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	for _, p := range s.hostPaths() {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// RestoreHostState puts the recorded sysctls back and removes the host paths the cluster
// created, if they are empty (after the nodes' mount namespaces are gone, they are).
func (s *Settings) RestoreHostState() ([]string, error) {
	var did []string
	var errs []error
	sysctls := filepath.Join(s.HostStateDir(), "sysctls")
	if lines, err := readLines(sysctls); err == nil {
		for _, line := range lines {
			key, want, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			have, err := os.ReadFile(sysctlPath(key))
			if err != nil || strings.TrimSpace(string(have)) == want {
				continue
			}
			if err := os.WriteFile(sysctlPath(key), []byte(want), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restore %s: %w", key, err))
				continue
			}
			did = append(did, fmt.Sprintf("restored %s=%s (was %s)", key, want, strings.TrimSpace(string(have))))
		}
		os.Remove(sysctls)
	}
	created := filepath.Join(s.HostStateDir(), "created-paths")
	if lines, err := readLines(created); err == nil {
		for _, p := range lines {
			if p == "" || !exists(p) {
				continue
			}
			if err := removeCreatedDir(p); err != nil {
				errs = append(errs, fmt.Errorf("leaving %s: %w", p, err))
				continue
			}
			did = append(did, "removed "+p)
		}
		os.Remove(created)
	}
	return did, errors.Join(errs...)
}

// removeCreatedDir removes an empty directory the cluster created. ip netns bind-mounts its
// directory onto itself (to make it a shared mount), so an empty /run/netns is a mount point
// that rmdir refuses with EBUSY: it is unmounted first, but only while nothing is in it.
func removeCreatedDir(p string) error {
	err := os.Remove(p)
	for range 3 { // a directory bound onto itself by two ups has two mounts to undo
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		if entries, rerr := os.ReadDir(p); rerr != nil || len(entries) > 0 {
			return err
		}
		if uerr := unix.Unmount(p, unix.MNT_DETACH); uerr != nil {
			return fmt.Errorf("unmount: %w", uerr)
		}
		err = os.Remove(p)
	}
	return err
}

func readLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}
