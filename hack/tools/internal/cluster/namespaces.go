package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// inNetns runs f on an OS thread that has entered the node's network namespace. The thread is
// thrown away afterwards (it stays locked), so no other goroutine ever runs in the namespace.
func inNetns(n *Node, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := netns.GetFromName(n.Netns())
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// EnsureMountNamespace makes the node's persistent mount namespace, where its private
// directories are bound over the fixed paths (PrivateBinds). The namespace is a copy of the
// host's, private: the mounts the node makes (pod volumes, container root file systems) never
// reach the host, and go when the namespace goes.
func (s *Settings) EnsureMountNamespace(n *Node) error {
	if err := s.ensurePrivateNamespaceDir(); err != nil {
		return err
	}
	for _, b := range n.PrivateBinds() {
		if err := os.MkdirAll(b.Source, 0o755); err != nil {
			return err
		}
	}
	file := n.MountNamespace()
	if isMountPoint(file) {
		return nil // made by an earlier up: the binds are in place
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		return err
	}
	if err := run("unshare", "--mount="+file, "--propagation", "private", "true"); err != nil {
		return err
	}
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, b := range n.PrivateBinds() {
		fmt.Fprintf(&script, "mount --bind %q %q\n", b.Source, b.Target)
	}
	return run("nsenter", "--mount="+file, "--", "/bin/sh", "-c", script.String())
}

// ensurePrivateNamespaceDir: a mount namespace file can be bound only onto a private mount
// (otherwise the namespace would contain a mount of itself).
func (s *Settings) ensurePrivateNamespaceDir() error {
	dir := s.NamespaceDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if isMountPoint(dir) {
		return nil
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dir, err)
	}
	return unix.Mount("", dir, "", unix.MS_PRIVATE, "")
}

// RemoveMountNamespaces unmounts the nodes' namespace files (the namespaces die with their
// last process) and the private directory.
func (s *Settings) RemoveMountNamespaces() ([]string, error) {
	var did []string
	var errs []error
	entries, _ := os.ReadDir(s.NamespaceDir())
	for _, e := range entries {
		file := filepath.Join(s.NamespaceDir(), e.Name())
		if isMountPoint(file) {
			if err := unix.Unmount(file, unix.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", file, err))
				continue
			}
			did = append(did, "released mount namespace "+strings.TrimSuffix(e.Name(), ".mnt"))
		}
		os.Remove(file)
	}
	if isMountPoint(s.NamespaceDir()) {
		if err := unix.Unmount(s.NamespaceDir(), unix.MNT_DETACH); err != nil {
			errs = append(errs, err)
		}
	}
	return did, errors.Join(errs...)
}

// isMountPoint says whether path is a mount point of this (the host's) mount namespace.
func isMountPoint(path string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == path {
			return true
		}
	}
	return false
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// cgroupHierarchies are the cgroup hierarchies the kubelet uses: every v1 controller
// hierarchy (and systemd's named one), or the v2 one.
func cgroupHierarchies() []string {
	if exists("/sys/fs/cgroup/cgroup.controllers") {
		return []string{"/sys/fs/cgroup"} // v2
	}
	var out []string
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range entries {
		dir := filepath.Join("/sys/fs/cgroup", e.Name())
		if e.Name() == "unified" || !exists(filepath.Join(dir, "cgroup.procs")) {
			continue
		}
		out = append(out, dir)
	}
	return out
}

// EnsureCgroupRoot makes the node's cgroup root in every hierarchy: the kubelet requires it to
// exist, and puts every pod of the node below it, so nodes never clean up each other's pods.
func (s *Settings) EnsureCgroupRoot(n *Node) error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, n.CgroupRoot())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		// A v1 cpuset cgroup takes tasks only once it has CPUs and memory nodes.
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if b, _ := os.ReadFile(filepath.Join(dir, f)); strings.TrimSpace(string(b)) != "" {
					continue
				}
				parent, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	if exists("/sys/fs/cgroup/cgroup.controllers") {
		// v2: hand the node's subtree the controllers the kubelet uses.
		ctrl, _ := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
		var enable []string
		for _, c := range strings.Fields(string(ctrl)) {
			enable = append(enable, "+"+c)
		}
		if len(enable) > 0 {
			_ = os.WriteFile(filepath.Join("/sys/fs/cgroup", n.CgroupRoot(), "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644)
		}
	}
	return nil
}

// cleanupHierarchies are the hierarchies in which the node's pods may leave cgroups: on a
// hybrid host runc also makes every container's cgroup in the v2 "unified" hierarchy.
func cleanupHierarchies() []string {
	hs := cgroupHierarchies()
	if unified := "/sys/fs/cgroup/unified"; len(hs) > 1 && exists(filepath.Join(unified, "cgroup.procs")) {
		hs = append(hs, unified)
	}
	return hs
}

// cgroupProcesses lists the processes below the node's cgroup root.
func cgroupProcesses(n *Node) []int {
	seen := map[int]bool{}
	for _, h := range cleanupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, n.CgroupRoot()), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	var pids []int
	for pid := range seen {
		pids = append(pids, pid)
	}
	return pids
}

// RemoveCgroupRoot kills what is left below the node's cgroup root and removes it, deepest
// cgroups first.
func (s *Settings) RemoveCgroupRoot(n *Node) ([]string, error) {
	var did []string
	if pids := cgroupProcesses(n); len(pids) > 0 {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		did = append(did, fmt.Sprintf("killed %d leftover pod processes of %s", len(pids), n.Name))
		for deadline := time.Now().Add(10 * time.Second); len(cgroupProcesses(n)) > 0 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
	}
	var errs []error
	removed := 0
	for _, h := range cleanupHierarchies() {
		root := filepath.Join(h, n.CgroupRoot())
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := os.Remove(d); err == nil {
				removed++
			}
		}
		if exists(root) {
			errs = append(errs, fmt.Errorf("could not remove cgroup %s", root))
		}
	}
	if removed > 0 {
		did = append(did, fmt.Sprintf("removed %d cgroups of %s", removed, n.Name))
	}
	return did, errors.Join(errs...)
}
