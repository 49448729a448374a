// Package podsockets is how virt-handler, privileged and in the host's PID namespace, reaches
// the unix sockets a launcher pod offers it without trusting anything inside that pod.
//
// A launcher's socket directory is an emptyDir of its pod, found below the kubelet's pods
// directory by the pod's UID (which virt-controller, not the launcher, records in the
// instance's status). Everything in that directory is the tenant's: whoever may exec into the
// launcher container may replace a socket by a symbolic link, a hard link, a directory or a
// socket of some other process. So:
//
//   - every path is resolved with openat2 below a directory descriptor, refusing symbolic and
//     magic links and never leaving that directory (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
//     RESOLVE_NO_MAGICLINKS), and the result is used through its descriptor: a socket is
//     connected to through /proc/self/fd/N of an O_PATH descriptor, so a swap after the open
//     changes nothing;
//   - the process listening on a socket must be a process of that very pod: its cgroup names
//     the pod's UID, and it lives in the host's user namespace (so its network namespace is the
//     pod's own: making another one takes privileges the pod does not have). It is held by a
//     pidfd while it is checked, so a recycled PID cannot stand in for it;
//   - nothing is ever created, changed or removed there: the kubelet owns the emptyDir.
package podsockets

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// emptyDirPlugin is the kubelet's directory of emptyDir volumes inside a pod's directory.
const emptyDirPlugin = "kubernetes.io~empty-dir"

// resolveStrict never follows a link of any kind and never leaves the starting directory.
const resolveStrict = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// ErrNotSocket is returned when a name in a launcher's directory is not a socket.
var ErrNotSocket = errors.New("not a socket")

// errNotPlainName refuses socket names that are not a single path element.
var errNotPlainName = errors.New("not a plain name")

// podUIDPattern is a Kubernetes UID as the API server makes them (RFC 4122 text form). Names
// from elsewhere never reach openat2 (which would refuse ".." anyway).
var podUIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// volumeNamePattern is a pod volume name: a DNS label.
var volumeNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Root is the kubelet's pods directory (<kubelet root dir>/pods), opened once.
type Root struct {
	fd   int
	path string
	// Peers decides whether a socket's peer belongs to a pod; ProcPeers when nil.
	Peers PeerVerifier
	// HostNetNS are network namespaces no launcher pod may share, the host's above all (a pod
	// of the host's network that a tenant passes off as a launcher would have the handler
	// set up the guest's network on the node itself); DefaultHostNetNS when empty. Those that
	// cannot be read are skipped.
	HostNetNS []string
}

// DefaultHostNetNS are the network namespace of the host's init, which the handler sees in
// the host's PID namespace (where the kernel lets it read it), and the handler's own.
var DefaultHostNetNS = []string{"/proc/1/ns/net", "/proc/self/ns/net"}

// OpenRoot opens the kubelet's pods directory.
func OpenRoot(path string) (*Root, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open kubelet pods directory %s: %w", path, err)
	}
	return &Root{fd: fd, path: path}, nil
}

// Close releases the directory.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Path is the directory's path, for messages.
func (r *Root) Path() string { return r.path }

// Dir opens the emptyDir volume of a pod. The directory itself belongs to the kubelet (the
// tenant can write in it, not replace it), and it is resolved without following links.
func (r *Root) Dir(podUID types.UID, volume string) (*Dir, error) {
	if !podUIDPattern.MatchString(string(podUID)) {
		return nil, fmt.Errorf("pod UID %q is not a UID", podUID)
	}
	if !volumeNamePattern.MatchString(volume) {
		return nil, fmt.Errorf("volume name %q is not a DNS label", volume)
	}
	rel := string(podUID) + "/volumes/" + emptyDirPlugin + "/" + volume
	fd, err := openat2(r.fd, rel, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("pod %s volume %s: %w", podUID, volume, err)
	}
	peers := r.Peers
	if peers == nil {
		peers = ProcPeers{}
	}
	hostNetNS := r.HostNetNS
	if len(hostNetNS) == 0 {
		hostNetNS = DefaultHostNetNS
	}
	return &Dir{fd: fd, podUID: podUID, peers: peers, path: r.path + "/" + rel, hostNetNS: hostNetNS}, nil
}

// DescriptorPath names the directory through this process's descriptor of it
// (/proc/self/fd/N): valid while the Dir is open, and blind to renames inside the pod.
func (d *Dir) DescriptorPath() string { return "/proc/self/fd/" + strconv.Itoa(d.fd) }

// Dir is one pod's socket directory, held open.
type Dir struct {
	fd        int
	podUID    types.UID
	peers     PeerVerifier
	path      string
	hostNetNS []string

	// afterOpen, in tests, runs between resolving a socket and connecting to it: the moment
	// a swap would matter if the path were used again.
	afterOpen func()
}

// PodUID is the pod the directory belongs to.
func (d *Dir) PodUID() types.UID { return d.podUID }

// Path is where the directory was found, for messages.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Stat says whether name is a socket in the directory, without following any link.
func (d *Dir) Stat(name string) error {
	fd, err := d.openSocket(name)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// openSocket resolves name strictly and checks that it is a socket; it returns an O_PATH
// descriptor of it.
func (d *Dir) openSocket(name string) (int, error) {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return -1, fmt.Errorf("socket name %q: %w", name, errNotPlainName)
	}
	fd, err := openat2(d.fd, name, unix.O_PATH|unix.O_CLOEXEC)
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%s: a symbolic link, never followed: %w", name, err)
	}
	if err != nil {
		return -1, fmt.Errorf("%s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w (mode %#o)", name, ErrNotSocket, st.Mode&unix.S_IFMT)
	}
	return fd, nil
}

// Conn is a connection to a verified process of the pod.
type Conn struct {
	*net.UnixConn
	// Peer is the process that listens on the socket.
	Peer *Peer
}

// Close closes the connection and releases the peer.
func (c *Conn) Close() error {
	err := c.UnixConn.Close()
	c.Peer.Close()
	return err
}

// Dial connects to the socket name in the directory and verifies that the process listening
// on it belongs to the pod. The socket is reached through its descriptor, never its path
// again, so no link or swap can redirect the connection.
func (d *Dir) Dial(name string) (*Conn, error) {
	fd, err := d.openSocket(name)
	if err != nil {
		return nil, err
	}
	if d.afterOpen != nil {
		d.afterOpen()
	}
	// /proc/self/fd/N names the inode the descriptor holds; connect(2) reaches the socket
	// bound to that inode. (sun_path is short; this path always fits.)
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Net: "unix", Name: fmt.Sprintf("/proc/self/fd/%d", fd)})
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", name, err)
	}
	peer, err := d.verifyPeer(c)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Conn{UnixConn: c, Peer: peer}, nil
}

// verifyPeer finds the process behind a connection and checks it belongs to the pod.
func (d *Dir) verifyPeer(c *net.UnixConn) (*Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, fmt.Errorf("peer credentials: %w", credErr)
	}
	if cred.Pid <= 0 {
		return nil, errors.New("the socket's peer has no process in this PID namespace")
	}
	// Hold the process first, then check it, then make sure it still lives: whatever was
	// checked is that process, not a later one with a recycled PID. (Were the listener gone
	// and its PID reused before the pidfd was taken, the checks would judge the newcomer, who
	// passes only if it is of the same pod.)
	pidfd, err := unix.PidfdOpen(int(cred.Pid), 0)
	if err != nil {
		return nil, fmt.Errorf("peer process %d: %w", cred.Pid, err)
	}
	p := &Peer{pid: int(cred.Pid), pidfd: pidfd, hostNetNS: d.hostNetNS}
	if err := d.peers.Verify(p.pid, d.podUID); err != nil {
		p.Close()
		return nil, fmt.Errorf("peer process %d refused: %w", p.pid, err)
	}
	if err := p.alive(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Peer is a verified process of a launcher pod, held by a pidfd.
type Peer struct {
	pid       int
	pidfd     int
	hostNetNS []string
}

// PID is the process id in the handler's (the host's) PID namespace.
func (p *Peer) PID() int { return p.pid }

// Close releases the process.
func (p *Peer) Close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
		p.pidfd = -1
	}
}

func (p *Peer) alive() error {
	if err := unix.PidfdSendSignal(p.pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("peer process %d is gone: %w", p.pid, err)
	}
	return nil
}

// NetNS opens the process's network namespace: the pod's, which must not be the host's.
func (p *Peer) NetNS() (*os.File, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", p.pid))
	if err != nil {
		return nil, fmt.Errorf("network namespace of process %d: %w", p.pid, err)
	}
	// Opened while the process lived: the namespace is the verified process's own.
	if err := p.alive(); err != nil {
		f.Close()
		return nil, err
	}
	var ns unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &ns); err != nil {
		f.Close()
		return nil, err
	}
	for _, path := range p.hostNetNS {
		var host unix.Stat_t
		if unix.Stat(path, &host) != nil {
			continue // not readable here (the kernel may hide init's namespaces)
		}
		if ns.Dev == host.Dev && ns.Ino == host.Ino {
			f.Close()
			return nil, fmt.Errorf("process %d runs in the host's network namespace (%s): no launcher pod does", p.pid, path)
		}
	}
	return f, nil
}

// openat2 resolves path strictly below dirfd. The kernel answers EAGAIN when a rename raced
// with the lookup; a few tries settle it, and a tenant renaming without pause only fails
// their own lookups.
func openat2(dirfd int, path string, flags int) (int, error) {
	var err error
	for range 8 {
		var fd int
		fd, err = unix.Openat2(dirfd, path, &unix.OpenHow{Flags: uint64(flags), Resolve: resolveStrict})
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
	return -1, err
}
