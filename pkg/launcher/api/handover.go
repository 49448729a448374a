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

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A handover gives the launcher an open descriptor of a claim's file that virt-handler opened
// beneath an attachment pod's volume (docs/hotplug.md): the launcher gets the descriptor and
// never a path on the node. It is one message on a unix stream socket of the launcher's
// socket volume (HandoverSocket): a 4-byte big-endian length, then that many bytes of a
// Handover in JSON, the descriptor riding on the same sendmsg as SCM_RIGHTS. The launcher
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
	// MemoryDump names the memory dump file the descriptor is, for a memory dump volume:
	// the launcher writes the guest's memory to it.
	MemoryDump string `json:"memoryDump,omitempty"`
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
	return nil
}

// SendHandover sends h with the descriptor of f over c, in one message.
func SendHandover(c *net.UnixConn, h Handover, f *os.File) error {
	if err := h.Validate(); err != nil {
		return err
	}
	body, err := json.Marshal(h)
	if err != nil {
		return err
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	msg = append(msg, body...)
	n, oobn, err := c.WriteMsgUnix(msg, unix.UnixRights(int(f.Fd())), nil)
	if err != nil {
		return fmt.Errorf("hand over volume %s: %w", h.Volume, err)
	}
	if n != len(msg) || oobn == 0 {
		return fmt.Errorf("hand over volume %s: a short write (%d of %d bytes)", h.Volume, n, len(msg))
	}
	return nil
}

// ReceiveHandover reads one handover from c: what it is and exactly one descriptor, as a
// file the caller closes. Any other descriptors that came with it are closed; a message
// without one, or longer than maxHandover, or not a valid Handover, is refused.
func ReceiveHandover(c *net.UnixConn) (Handover, *os.File, error) {
	var h Handover
	buf := make([]byte, 4+maxHandover)
	// Room for a few descriptors: more than one is refused, and the kernel drops (and
	// reports, MSG_CTRUNC) what does not fit.
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return h, nil, fmt.Errorf("read a handover: %w", err)
	}
	fds, err := descriptors(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}
	switch {
	case err != nil:
		closeAll()
		return h, nil, err
	case flags&unix.MSG_CTRUNC != 0 || len(fds) != 1:
		closeAll()
		return h, nil, fmt.Errorf("a handover carries exactly one descriptor, not %d", len(fds))
	}
	f := os.NewFile(uintptr(fds[0]), "handover")
	if n < 4 {
		if _, err := io.ReadFull(c, buf[n:4]); err != nil {
			f.Close()
			return h, nil, fmt.Errorf("read a handover's length: %w", err)
		}
		n = 4
	}
	size := int(binary.BigEndian.Uint32(buf[:4]))
	if size > maxHandover {
		f.Close()
		return h, nil, fmt.Errorf("a handover of %d bytes (at most %d)", size, maxHandover)
	}
	if n < 4+size {
		if _, err := io.ReadFull(c, buf[n:4+size]); err != nil {
			f.Close()
			return h, nil, fmt.Errorf("read a handover: %w", err)
		}
	} else if n > 4+size {
		f.Close()
		return h, nil, errors.New("a handover followed by more bytes than its length says")
	}
	if err := json.Unmarshal(buf[4:4+size], &h); err != nil {
		f.Close()
		return h, nil, fmt.Errorf("decode a handover: %w", err)
	}
	if err := h.Validate(); err != nil {
		f.Close()
		return h, nil, err
	}
	return h, f, nil
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

// HandOver sends h with f over c and waits for the launcher's answer (the caller sets c's
// deadline): nil once the launcher took the descriptor.
func HandOver(c *net.UnixConn, h Handover, f *os.File) error {
	if err := SendHandover(c, h, f); err != nil {
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
