package podsockets

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// PeerVerifier decides whether a process belongs to a pod.
type PeerVerifier interface {
	Verify(pid int, podUID types.UID) error
}

// ProcPeers verifies processes by what the kernel says of them in /proc: the cgroup the
// kubelet put the pod's containers in, and the user namespace. A process cannot move itself
// to another pod's cgroup (the cgroup file system is read-only in a container and owned by
// root), nor make a network namespace of its own without a user namespace of its own.
type ProcPeers struct {
	// Proc is the proc file system of the handler's PID namespace; /proc when empty.
	Proc string
}

// Verify checks that pid is in podUID's cgroup and in the handler's user namespace.
func (v ProcPeers) Verify(pid int, podUID types.UID) error {
	proc := v.Proc
	if proc == "" {
		proc = "/proc"
	}
	cgroups, err := os.ReadFile(fmt.Sprintf("%s/%d/cgroup", proc, pid))
	if err != nil {
		return fmt.Errorf("read its cgroups: %w", err)
	}
	if !InPodCgroup(cgroups, podUID) {
		return fmt.Errorf("it is not a process of pod %s (cgroups: %s)", podUID, firstLine(cgroups))
	}
	var own, its unix.Stat_t
	if err := unix.Stat(proc+"/self/ns/user", &own); err != nil {
		return fmt.Errorf("own user namespace: %w", err)
	}
	if err := unix.Stat(fmt.Sprintf("%s/%d/ns/user", proc, pid), &its); err != nil {
		return fmt.Errorf("its user namespace: %w", err)
	}
	if own.Dev != its.Dev || own.Ino != its.Ino {
		return fmt.Errorf("it runs in a user namespace of its own")
	}
	return nil
}

// InPodCgroup says whether a /proc/<pid>/cgroup file puts the process in the pod's cgroup, as
// the kubelet names them with either cgroup driver: a path element pod<uid> (cgroupfs) or
// <qos slice>-pod<uid with underscores>.slice (systemd). One hierarchy saying so is enough:
// only root on the node can put a process into any pod's cgroup. (Not every hierarchy lists
// the pod: in a v1/v2 hybrid the container runtime may leave the unified one alone.)
func InPodCgroup(cgroups []byte, podUID types.UID) bool {
	cgroupfs := "pod" + string(podUID)
	systemd := "-pod" + strings.ReplaceAll(string(podUID), "-", "_") + ".slice"
	sc := bufio.NewScanner(bytes.NewReader(cgroups))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			return false
		}
		for _, elem := range strings.Split(parts[2], "/") {
			if elem == cgroupfs || strings.HasSuffix(elem, systemd) {
				return true
			}
		}
	}
	return false
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
