package api

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A handover gives the launcher open descriptors of a claim's file that virt-handler opened
// beneath an attachment pod's volume (docs/hotplug.md): the launcher gets descriptors and
// never a path on the node. It is one message on a unix stream socket of the launcher's
// socket volume (HandoverSocket): a 4-byte big-endian length, then that many bytes of a
// Handover in JSON, the descriptors riding on the same sendmsg as SCM_RIGHTS. The launcher
// answers one byte, HandoverOK, or an error's text.

// HandoverSocket is the launcher's socket for handovers, beside its command socket.
const HandoverSocket = "handover.sock"

// HandoverOK is the launcher's answer to a handover it took.
const HandoverOK = 0

// maxHandover bounds a handover's JSON, so a peer cannot make the other side hold much.
const maxHandover = 1024

// Handover says what a handed-over descriptor is.
type Handover struct {
	// Volume names the instance's volume whose file the descriptor is.
	Volume string `json:"volume"`
	// Writable: the descriptor was opened for reading and writing (a disk, a memory dump).
	Writable bool `json:"writable,omitempty"`
	// ReadOnlyCopy: a second descriptor follows the first, the same file opened read-only.
	// QEMU opens a disk read-only first and for writing once the guest's device is added,
	// and takes each from a descriptor of that access mode, which cannot be changed later.
	// (Handlers before it sent one descriptor.)
	ReadOnlyCopy bool `json:"readOnlyCopy,omitempty"`
	// MemoryDump names the memory dump file the descriptor is, for a memory dump volume:
	// the launcher writes the guest's memory to it.
	MemoryDump string `json:"memoryDump,omitempty"`
}

// descriptors is how many descriptors come with h.
func (h Handover) descriptors() int {
	if h.ReadOnlyCopy {
		return 2
	}
	return 1
}

// MemoryDumpFile is what a memory dump's file is called in its claim's root, as KubeVirt
// names them: <instance>-<claim>-<YYYYMMDD-HHMMSS>.memory.dump.
var MemoryDumpFile = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,230}-[0-9]{8}-[0-9]{6}\.memory\.dump$`)

// Validate checks what a handover may name: a volume name, as the API's validation allows.
func (h Handover) Validate() error {
	if errs := validation.IsDNS1123Label(h.Volume); len(errs) > 0 {
		return fmt.Errorf("handover of volume %q: %v", h.Volume, errs)
	}
	if h.MemoryDump != "" && !MemoryDumpFile.MatchString(h.MemoryDump) {
		return fmt.Errorf("handover of volume %s: %q is no memory dump file name", h.Volume, h.MemoryDump)
	}
	if h.ReadOnlyCopy && (!h.Writable || h.MemoryDump != "") {
		return fmt.Errorf("handover of volume %s: a read-only copy comes only with a writable disk", h.Volume)
	}
	return nil
}

// checkFiles checks that files are what h says: the first opened for reading and writing
// when Writable, else read-only; a read-only copy of the same file.
func (h Handover) checkFiles(files []*os.File) error {
	modes := []int{unix.O_RDONLY, unix.O_RDONLY}
	if h.Writable {
		modes[0] = unix.O_RDWR
	}
	for i, f := range files {
		flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
		if err != nil {
			return err
		}
		if flags&unix.O_ACCMODE != modes[i] {
			return fmt.Errorf("handover of volume %s: descriptor %d has the wrong access mode (%#o)", h.Volume, i, flags&unix.O_ACCMODE)
		}
	}
	if len(files) == 2 && !sameFile(files[0], files[1]) {
		return fmt.Errorf("handover of volume %s: the read-only copy is another file", h.Volume)
	}
	return nil
}

// ReadOnlyCopy opens f again, read-only: the same inode, reached through f's descriptor and
// not by any path that could have changed since f was opened. virt-handler makes a disk's
// copy so; a launcher makes one for a handler from before copies.
func ReadOnlyCopy(f *os.File) (*os.File, error) {
	ro, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("a read-only copy of %s: %w", f.Name(), err)
	}
	if !sameFile(f, ro) {
		ro.Close()
		return nil, fmt.Errorf("a read-only copy of %s is another file", f.Name())
	}
	return ro, nil
}

// sameFile says whether a and b are descriptors of one inode.
func sameFile(a, b *os.File) bool {
	var sa, sb unix.Stat_t
	return unix.Fstat(int(a.Fd()), &sa) == nil && unix.Fstat(int(b.Fd()), &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// SendHandover sends h with the descriptors of files over c, in one message.
func SendHandover(c *net.UnixConn, h Handover, files ...*os.File) error {
	if err := h.Validate(); err != nil {
		return err
	}
	if len(files) != h.descriptors() {
		return fmt.Errorf("handover of volume %s: %d descriptors, not %d", h.Volume, len(files), h.descriptors())
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	body, err := json.Marshal(h)
	if err != nil {
		return err
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	msg = append(msg, body...)
	n, oobn, err := c.WriteMsgUnix(msg, unix.UnixRights(fds...), nil)
	if err != nil {
		return fmt.Errorf("hand over volume %s: %w", h.Volume, err)
	}
	if n != len(msg) || oobn == 0 {
		return fmt.Errorf("hand over volume %s: a short write (%d of %d bytes)", h.Volume, n, len(msg))
	}
	return nil
}

// ReceiveHandover reads one handover from c: what it is and its descriptors (one, or two
// with a read-only copy), as files the caller closes. A message with other descriptors than
// it says, or longer than maxHandover, or not a valid Handover, is refused, and every
// descriptor that came with it closed.
func ReceiveHandover(c *net.UnixConn) (Handover, []*os.File, error) {
	var h Handover
	buf := make([]byte, 4+maxHandover)
	// Room for a few descriptors: more than two are refused, and the kernel drops (and
	// reports, MSG_CTRUNC) what does not fit.
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return h, nil, fmt.Errorf("read a handover: %w", err)
	}
	fds, err := descriptors(oob[:oobn])
	var files []*os.File
	for _, fd := range fds {
		files = append(files, os.NewFile(uintptr(fd), "handover"))
	}
	refuse := func(err error) (Handover, []*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return Handover{}, nil, err
	}
	switch {
	case err != nil:
		return refuse(err)
	case flags&unix.MSG_CTRUNC != 0 || len(fds) == 0 || len(fds) > 2:
		return refuse(fmt.Errorf("a handover carries one or two descriptors, not %d", len(fds)))
	}
	if n < 4 {
		if _, err := io.ReadFull(c, buf[n:4]); err != nil {
			return refuse(fmt.Errorf("read a handover's length: %w", err))
		}
		n = 4
	}
	size := int(binary.BigEndian.Uint32(buf[:4]))
	if size > maxHandover {
		return refuse(fmt.Errorf("a handover of %d bytes (at most %d)", size, maxHandover))
	}
	if n < 4+size {
		if _, err := io.ReadFull(c, buf[n:4+size]); err != nil {
			return refuse(fmt.Errorf("read a handover: %w", err))
		}
	} else if n > 4+size {
		return refuse(errors.New("a handover followed by more bytes than its length says"))
	}
	if err := json.Unmarshal(buf[4:4+size], &h); err != nil {
		return refuse(fmt.Errorf("decode a handover: %w", err))
	}
	if err := h.Validate(); err != nil {
		return refuse(err)
	}
	if len(files) != h.descriptors() {
		return refuse(fmt.Errorf("handover of volume %s: %d descriptors, not %d", h.Volume, len(files), h.descriptors()))
	}
	if err := h.checkFiles(files); err != nil {
		return refuse(err)
	}
	return h, files, nil
}

// descriptors are the descriptors of the SCM_RIGHTS messages in oob.
func descriptors(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse a handover's control messages: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		rights, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, fmt.Errorf("parse a handover's descriptors: %w", err)
		}
		fds = append(fds, rights...)
	}
	return fds, nil
}

// HandOver sends h with files over c and waits for the launcher's answer (the caller sets
// c's deadline): nil once the launcher took the descriptors.
func HandOver(c *net.UnixConn, h Handover, files ...*os.File) error {
	if err := SendHandover(c, h, files...); err != nil {
		return err
	}
	answer := make([]byte, maxHandover)
	n, err := c.Read(answer)
	switch {
	case err != nil && n == 0:
		return fmt.Errorf("hand over volume %s: no answer: %w", h.Volume, err)
	case n == 1 && answer[0] == HandoverOK:
		return nil
	}
	return fmt.Errorf("hand over volume %s: the launcher refused: %q", h.Volume, answer[:n])
}
