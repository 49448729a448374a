package launcher

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/migration/tunnel"
)

// The launcher's end of the migration tunnel (package tunnel has the protocol): the
// migration socket in the socket directory, which only virt-handler dials, and on a source
// the local sockets libvirtd and QEMU connect to.

const (
	// maxIdleUpstreams bounds the handler's idle connections a source keeps.
	maxIdleUpstreams = 8
	// upstreamWait is how long a local stream waits for the handler to offer a connection.
	upstreamWait = 30 * time.Second
	// headerWait bounds the handler's first line.
	headerWait = 10 * time.Second
)

// upstream is an idle connection the handler offered for an outgoing migration's streams.
type upstream struct{ conn net.Conn }

// MigrationSocketPath is the migration socket.
func (l *Launcher) MigrationSocketPath() string {
	return filepath.Join(l.cfg.SocketDir, tunnel.SocketName)
}

// serveTunnel accepts the handler's connections on the migration socket until ctx ends.
func (l *Launcher) serveTunnel(ctx context.Context, ln net.Listener) {
	acceptEach(ctx, ln, "migration socket", l.tunnelConn)
}

// acceptEach serves each connection to ln on a goroutine of its own until ctx ends; what
// names the socket in the log.
func acceptEach(ctx context.Context, ln net.Listener, what string, serve func(net.Conn)) {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				klog.ErrorS(err, what)
			}
			return
		}
		go serve(c)
	}
}

// tunnelConn serves one of the handler's connections: a stream into this target, or an
// upstream for the migration out of this source.
func (l *Launcher) tunnelConn(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(headerWait))
	verb, rest, err := tunnel.ReadLine(c)
	if err != nil {
		c.Close()
		return
	}
	switch verb {
	case tunnel.VerbTarget:
		l.incomingStream(c, rest)
	case tunnel.VerbSource:
		l.mu.Lock()
		o := l.out
		l.mu.Unlock()
		if o == nil || o.uid != rest {
			c.Close()
			return
		}
		_ = c.SetDeadline(time.Time{})
		select {
		case o.upstreams <- &upstream{conn: c}:
		default:
			c.Close() // enough idle ones
		}
	default:
		c.Close()
	}
}

// incomingStream connects a stream of the migration into this launcher to its local end:
// libvirtd's socket, or the sockets the arriving QEMU listens on.
func (l *Launcher) incomingStream(c net.Conn, name string) {
	refuse := func(msg string) {
		_ = tunnel.WriteLine(c, tunnel.AnswerError, msg)
		c.Close()
	}
	stream, err := tunnel.ParseStream(name)
	if err != nil {
		refuse(err.Error())
		return
	}
	l.mu.Lock()
	m := l.state.Migration
	target := m != nil && m.Role == api.MigrationTarget && !m.Failed && !l.state.Phase.Final()
	l.mu.Unlock()
	if !target {
		refuse("this launcher expects no migration")
		return
	}
	path := l.cfg.LibvirtSocket
	if stream != tunnel.StreamLibvirt {
		path = l.Layout().MigrationSocket(string(stream))
	}
	local, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		refuse("connect " + string(stream) + ": " + err.Error())
		return
	}
	if err := tunnel.WriteLine(c, tunnel.AnswerOK); err != nil {
		local.Close()
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	tunnel.Splice(c, local)
}

// listenForStreams listens on the local sockets of an outgoing migration's streams; each
// connection libvirtd or QEMU makes goes out through an upstream of the handler's.
func (l *Launcher) listenForStreams(o *outgoing) error {
	lay := l.Layout()
	if err := os.MkdirAll(lay.MigrationDir, 0o700); err != nil {
		return err
	}
	for _, s := range tunnel.Streams {
		path := lay.MigrationSocket(string(s))
		_ = os.Remove(path)
		ln, err := net.Listen("unix", path)
		if err != nil {
			return err
		}
		o.listeners = append(o.listeners, func() { ln.Close(); _ = os.Remove(path) })
		go func(s tunnel.Stream) {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go o.outgoingStream(s, c)
			}
		}(s)
	}
	return nil
}

// outgoingStream carries one local connection out through an upstream.
func (o *outgoing) outgoingStream(s tunnel.Stream, c net.Conn) {
	timeout := time.NewTimer(upstreamWait)
	defer timeout.Stop()
	for {
		var up *upstream
		select {
		case up = <-o.upstreams:
		case <-timeout.C:
			klog.InfoS("no connection from virt-handler for a migration stream", "stream", s, "migration", o.uid)
			c.Close()
			return
		case <-o.done:
			c.Close()
			return
		}
		if err := tunnel.WriteLine(up.conn, string(s)); err != nil {
			up.conn.Close() // the handler let it go; take the next
			continue
		}
		klog.V(2).InfoS("migration stream out", "stream", s, "migration", o.uid)
		tunnel.Splice(c, up.conn)
		return
	}
}

// close stops listening and drops the idle upstreams; streams under way end with the
// migration.
func (o *outgoing) close() {
	for _, stop := range o.listeners {
		stop()
	}
	for {
		select {
		case up := <-o.upstreams:
			up.conn.Close()
		default:
			return
		}
	}
}
