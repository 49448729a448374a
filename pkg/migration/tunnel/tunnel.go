// Package tunnel is how a live migration's streams travel: launcher ↔ virt-handler over the
// launcher's migration socket, virt-handler ↔ virt-handler over mutual TLS. No launcher ever
// reaches the network for a migration, and the tenant's pod network is never the transport.
//
// A migration needs three kinds of stream, each opened by the source side: libvirt's RPC
// (the source libvirtd drives the target's, peer to peer), QEMU's memory stream and, for
// disks that are not shared, QEMU's NBD stream. The source launcher listens for them on unix
// sockets of its own; the target launcher connects them to its libvirtd and to the sockets
// its QEMU listens on.
//
// On a launcher's migration socket the handler always dials and speaks first, one line:
//
//	"target <stream>\n"  connect this connection to the local end of the stream; the launcher
//	                     answers "ok\n" once connected, or "error <message>\n".
//	"source <uid>\n"     an upstream for migration uid, out of this launcher; it stays idle
//	                     until a local client needs one, when the launcher writes "<stream>\n".
//
// After the exchange the connection carries the stream's bytes both ways. Lines are short
// and read a byte at a time, so nothing of the stream is consumed with them; whoever reads a
// line bounds its length and its wait, as the other end may be hostile.
package tunnel

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// SocketName is the launcher's migration socket in its socket directory.
const SocketName = "migration.sock"

// Stream is a kind of migration stream.
type Stream string

const (
	// StreamLibvirt is libvirt's RPC: the source libvirtd calls the target's.
	StreamLibvirt Stream = "libvirt"
	// StreamMemory is QEMU's migration stream (memory and device state).
	StreamMemory Stream = "memory"
	// StreamDisks is the NBD stream of the disks copied with the guest.
	StreamDisks Stream = "disks"
)

// Streams are the streams there are.
var Streams = []Stream{StreamLibvirt, StreamMemory, StreamDisks}

// ParseStream parses a stream name; anything else is an error.
func ParseStream(s string) (Stream, error) {
	for _, k := range Streams {
		if s == string(k) {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown migration stream %.32q", s)
}

// Verbs of the handler's first line.
const (
	VerbTarget = "target"
	VerbSource = "source"
)

// Answers of the target launcher.
const (
	AnswerOK    = "ok"
	AnswerError = "error"
)

// MaxLine bounds a protocol line, newline excluded.
const MaxLine = 256

// ErrLineTooLong is returned for a line longer than MaxLine.
var ErrLineTooLong = errors.New("tunnel: line too long")

// WriteLine writes the fields as one line.
func WriteLine(w io.Writer, fields ...string) error {
	line := strings.Join(fields, " ")
	if len(line) > MaxLine || strings.ContainsAny(line, "\n\x00") {
		return fmt.Errorf("tunnel: invalid line %.40q", line)
	}
	_, err := io.WriteString(w, line+"\n")
	return err
}

// ReadLine reads one line of at most MaxLine bytes, a byte at a time so that nothing after
// the newline is consumed, and splits it at the first space.
func ReadLine(r io.Reader) (verb, rest string, err error) {
	var buf [MaxLine + 1]byte
	n := 0
	for {
		if n == len(buf) {
			return "", "", ErrLineTooLong
		}
		if _, err := io.ReadFull(r, buf[n:n+1]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			return "", "", err
		}
		if buf[n] == '\n' {
			break
		}
		n++
	}
	line := string(buf[:n])
	verb, rest, _ = strings.Cut(line, " ")
	return verb, rest, nil
}

// ReadAnswer reads a target launcher's (or target handler's) answer: nil for "ok", the
// remote error otherwise.
func ReadAnswer(r io.Reader) error {
	verb, rest, err := ReadLine(r)
	if err != nil {
		return fmt.Errorf("tunnel: no answer: %w", err)
	}
	switch verb {
	case AnswerOK:
		return nil
	case AnswerError:
		return &RemoteError{Message: rest}
	}
	return fmt.Errorf("tunnel: unexpected answer %.40q", verb)
}

// RemoteError is the other end's refusal.
type RemoteError struct{ Message string }

func (e *RemoteError) Error() string { return "refused: " + e.Message }
