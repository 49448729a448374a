package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Down stops exactly what Up started and undoes its changes to the host: every node's pods
// (through CRI, so CNI releases their addresses), daemons, leftover processes and cgroups,
// the nodes' namespaces (their mounts, links, routes and iptables rules go with them), the
// bridge, loop devices of the cluster's volumes, recorded sysctls and host paths, and the
// registry. The data (PKI, etcd, images, the registry's, containerd content) stays for the next
// up; purge deletes it too.
func (s *Settings) Down(purge bool) error {
	start := time.Now()
	if !exists(s.ClusterDir) {
		Logf("[down] nothing to do: no cluster directory")
		return nil
	}
	if err := s.Lock(); err != nil {
		return err
	}
	var did []string
	var errs []error
	note := func(d []string, err error) {
		did = append(did, d...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	stopped := func(name, binary string, grace time.Duration) {
		if ran, _ := s.Stop(name, binary, grace); ran {
			did = append(did, "stopped "+name)
		}
	}

	s.stopAddons()
	nodes := s.existingNodes()
	for _, n := range nodes {
		// The kubelet first, so it restarts nothing; containerd stays until CRI has removed
		// every pod.
		stopped("kubelet@"+n.Name, s.Bin("kubelet"), 10*time.Second)
		containerd := s.ContainerdBinary()
		if s.Pid("containerd@"+n.Name, legacyContainerd) != 0 {
			containerd = legacyContainerd
		}
		if s.Pid("containerd@"+n.Name, containerd) != 0 && exists(s.Bin("crireset")) {
			out, err := output(s.Bin("crireset"), "-endpoint", "unix://"+n.ContainerdSocket(), "-timeout", "90s")
			if err != nil {
				Logf("[down] warning: %s: some pods could not be removed through CRI (%v); cleaning up by force", n.Name, err)
			} else if c := strings.Count(out, "removed pod sandbox"); c > 0 {
				did = append(did, fmt.Sprintf("removed %d pods of %s", c, n.Name))
			}
		}
		// The snapshot add-on's driver, if it ran: it holds the node's mount namespace.
		if ran, _ := s.stopCSIDriver(n); ran {
			did = append(did, "stopped hangar-local-csi@"+n.Name)
		}
		stopped("kube-proxy@"+n.Name, s.Bin("kube-proxy"), 5*time.Second)
		stopped("containerd@"+n.Name, containerd, 10*time.Second)
		note(s.killShims(n))
		note(s.RemoveCgroupRoot(n))
		// Pods that CRI did not remove left their addresses allocated.
		os.RemoveAll(n.CNIIPAMDir())
	}
	cp := s.ControlPlane()
	for i := len(cp) - 1; i >= 0; i-- {
		grace := 5 * time.Second
		switch cp[i].Name {
		case "kube-apiserver":
			grace = 3 * time.Second // it would drain watches for a minute
		case "etcd":
			grace = 10 * time.Second
		}
		stopped(cp[i].Name, cp[i].Binary, grace)
	}
	// The registry's data stays, as etcd's does: pushed images outlive a down.
	registry := s.registryDaemon()
	stopped(registry.Name, registry.Binary, 5*time.Second)
	note(s.DetachLoopDevices())
	note(s.RemoveMountNamespaces())
	note(s.RemoveNetwork(nodes))
	note(s.RestoreHostState())

	if purge {
		if err := s.purge(); err != nil {
			errs = append(errs, err)
		} else {
			did = append(did, "deleted "+s.ClusterDir)
		}
	}
	for _, d := range did {
		Logf("[down] %s", d)
	}
	if len(did) == 0 {
		Logf("[down] nothing to do: no cluster running")
	} else {
		Logf("[down] cluster down, host restored (%.1fs)", time.Since(start).Seconds())
	}
	return errors.Join(errs...)
}

// legacyContainerd is the containerd clusters of earlier tooling ran (Debian's): down stops
// those too.
const legacyContainerd = "/usr/bin/containerd"

// killShims kills the containerd shims of the node's containerd (recognised by their
// "-address <socket>" argument): they outlive containerd, and hold the node's mount
// namespace and its containers.
func (s *Settings) killShims(n *Node) ([]string, error) {
	want := " -address " + n.ContainerdSocket() + " "
	entries, _ := os.ReadDir("/proc")
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(args, "containerd-shim") && strings.Contains(args, want) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed++
		}
	}
	if killed == 0 {
		return nil, nil
	}
	time.Sleep(200 * time.Millisecond)
	return []string{fmt.Sprintf("killed %d containerd shims of %s", killed, n.Name)}, nil
}

// purge deletes the cluster directory once nothing is mounted below it.
func (s *Settings) purge() error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 {
			mp := unescapeMount(f[4])
			if mp == s.ClusterDir || strings.HasPrefix(mp, s.ClusterDir+"/") {
				return fmt.Errorf("%s is still mounted; not deleting %s", mp, s.ClusterDir)
			}
		}
	}
	return os.RemoveAll(s.ClusterDir)
}

// DetachLoopDevices detaches loop devices whose backing files are in the cluster directory
// (block volumes of the loop provisioner, or a test's), and before them the loop devices
// stacked on those: the kubelet holds every mapped block volume open through a loop device
// of its own, which a stopped kubelet never detaches.
func (s *Settings) DetachLoopDevices() ([]string, error) {
	type fileID struct{ dev, ino uint64 }
	ours := map[fileID]string{} // our devices' nodes in /dev -> their backing files
	backing := map[string]fileID{}
	entries, _ := os.ReadDir("/sys/block")
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "loop") {
			continue
		}
		id, err := loopBacking("/dev/" + e.Name())
		if err != nil {
			continue // not attached
		}
		backing[e.Name()] = id
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop", "backing_file"))
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), s.ClusterDir+"/") {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/dev/"+e.Name(), &st) == nil {
			ours[fileID{st.Dev, st.Ino}] = strings.TrimSpace(string(b))
		}
	}
	var did []string
	var errs []error
	detach := func(name, what string) {
		if err := loopDetach("/dev/" + name); err != nil {
			errs = append(errs, fmt.Errorf("detach /dev/%s: %w", name, err))
			return
		}
		did = append(did, fmt.Sprintf("detached /dev/%s (%s)", name, what))
	}
	for name, id := range backing { // stacked ones first
		if file, ok := ours[id]; ok {
			detach(name, "the kubelet's, on the device of "+filepath.Base(file))
		}
	}
	for name := range backing {
		b, _ := os.ReadFile(filepath.Join("/sys/block", name, "loop", "backing_file"))
		if file := strings.TrimSpace(string(b)); strings.HasPrefix(file, s.ClusterDir+"/") {
			detach(name, file)
		}
	}
	return did, errors.Join(errs...)
}

// loopBacking is the device and inode of the loop device's backing file.
func loopBacking(dev string) (id struct{ dev, ino uint64 }, err error) {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return id, err
	}
	defer unix.Close(fd)
	info, err := unix.IoctlLoopGetStatus64(fd)
	if err != nil {
		return id, err
	}
	id.dev, id.ino = info.Device, info.Inode
	return id, nil
}

// loopDetach detaches the loop device; a device still open is detached by the kernel when
// its last user closes it.
func loopDetach(dev string) error {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0)
}
