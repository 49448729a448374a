// Package podfiles opens a file of a pod's volume for virt-handler, which is privileged, the
// way package podsockets reaches a launcher's sockets: trusting nothing the pod could have
// changed. It serves hotplug (docs/hotplug.md): the attachment pod mounts a claim, and the
// handler opens the claim's file through that pod's own process and hands the descriptor to
// the launcher. Through the process, because the kubelet does not always mount a claim below
// the pod's directory (a hostPath volume, as local-path-provisioner makes, is mounted from
// where it is).
//
// Whoever may `kubectl exec` into the attachment pod owns what is in its volume: the file may
// be a link, a FIFO, a device or a directory by the time the handler looks. So the handler
//
//   - holds the process by a pidfd, checks it is the pod's (its cgroup names the pod's UID, it
//     is in the handler's user namespace), opens its root, and checks it still lives;
//   - resolves the path with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS)
//     below that root, as O_PATH, so nothing is opened before it is checked;
//   - takes only a regular file (or, when asked, a block device) that the pod's user may read
//     and write by its owner, group and mode: the descriptor gives the launcher no more than
//     that user could open in its own pod;
//   - only then opens it for reading and writing, through the O_PATH descriptor, and checks
//     it is still the same inode.
package podfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hangarvm/hangar/pkg/handler/podsockets"
)

// ErrRefused is wrapped by every refusal of what the pod offered (as opposed to a failure).
var ErrRefused = errors.New("refused")

// Opener opens files of pods' processes.
type Opener struct {
	// Proc is the proc file system of the handler's PID namespace; /proc when empty.
	Proc string
	// Peers decides whether a process is the pod's.
	Peers podsockets.PeerVerifier
	// UID and GID are the pod's user, who must be able to read and write the file.
	UID, GID uint32
}

// Kind is what a file may be.
type Kind int

const (
	// RegularFile: a disk image on a file system claim.
	RegularFile Kind = iota
	// BlockDevice: a block claim's device.
	BlockDevice
	// Disk: either, as a claim's volumeMode makes it.
	Disk
)

// Open opens path, relative to the root of process pid, which must be a process of pod podUID,
// for reading and writing; the file must be of kind.
func (o Opener) Open(pid int, podUID types.UID, path string, kind Kind) (*os.File, error) {
	if filepath.IsAbs(path) || path == "" {
		return nil, fmt.Errorf("%w: %q is not a path relative to the pod's root", ErrRefused, path)
	}
	proc := o.Proc
	if proc == "" {
		proc = "/proc"
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	if err := o.Peers.Verify(pid, podUID); err != nil {
		return nil, fmt.Errorf("%w: process %d: %v", ErrRefused, pid, err)
	}
	root, err := unix.Open(fmt.Sprintf("%s/%d/root", proc, pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("root of process %d: %w", pid, err)
	}
	defer unix.Close(root)
	// Opened while the verified process lived: the root is its own, not a newcomer's.
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return nil, fmt.Errorf("process %d is gone: %w", pid, err)
	}
	fd, err := unix.Openat2(root, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s in pod %s: %v", ErrRefused, path, podUID, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if err := o.check(&st, kind); err != nil {
		return nil, fmt.Errorf("%w: %s in pod %s: %v", ErrRefused, path, podUID, err)
	}
	// The descriptor names the checked inode; opening it through /proc reaches that inode
	// and nothing a link or a rename put at the path since.
	f, err := os.OpenFile(proc+"/self/fd/"+strconv.Itoa(fd), os.O_RDWR|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s in pod %s: %w", path, podUID, err)
	}
	var again unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &again); err != nil || again.Dev != st.Dev || again.Ino != st.Ino {
		f.Close()
		return nil, fmt.Errorf("%w: %s in pod %s changed while it was opened", ErrRefused, path, podUID)
	}
	return f, nil
}

// check accepts a file of kind that the pod's user may read and write.
func (o Opener) check(st *unix.Stat_t, kind Kind) error {
	switch format := st.Mode & unix.S_IFMT; {
	case kind == RegularFile && format == unix.S_IFREG:
	case kind == BlockDevice && format == unix.S_IFBLK:
	case kind == Disk && (format == unix.S_IFREG || format == unix.S_IFBLK):
	default:
		return fmt.Errorf("not a %s (mode %#o)", kind, format)
	}
	var read, write uint32
	switch {
	case st.Uid == o.UID:
		read, write = unix.S_IRUSR, unix.S_IWUSR
	case st.Gid == o.GID:
		read, write = unix.S_IRGRP, unix.S_IWGRP
	default:
		read, write = unix.S_IROTH, unix.S_IWOTH
	}
	if st.Mode&read == 0 || st.Mode&write == 0 {
		return fmt.Errorf("user %d (group %d) may not read and write it (owner %d, group %d, mode %#o)",
			o.UID, o.GID, st.Uid, st.Gid, st.Mode&0o777)
	}
	return nil
}

func (k Kind) String() string {
	switch k {
	case BlockDevice:
		return "block device"
	case Disk:
		return "regular file or block device"
	}
	return "regular file"
}

// Processes are the processes of pod podUID, by the cgroups /proc lists for every process
// of the handler's (the host's) PID namespace, lowest PID first.
func (o Opener) Processes(podUID types.UID) ([]int, error) {
	proc := o.Proc
	if proc == "" {
		proc = "/proc"
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cgroups, err := os.ReadFile(fmt.Sprintf("%s/%d/cgroup", proc, pid))
		if err == nil && podsockets.InPodCgroup(cgroups, podUID) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// OpenInPod opens path (relative to a container's root) in whichever process of pod podUID
// has it: a pod's processes have their containers' roots (the pause container's has no
// volume). The last refusal says why none did.
func (o Opener) OpenInPod(podUID types.UID, path string, kind Kind) (*os.File, error) {
	pids, err := o.Processes(podUID)
	if err != nil {
		return nil, err
	}
	lastErr := fmt.Errorf("%w: no process of pod %s", ErrRefused, podUID)
	for _, pid := range pids {
		f, err := o.Open(pid, podUID, path, kind)
		if err == nil {
			return f, nil
		}
		lastErr = err
	}
	return nil, lastErr
}
