package handler

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/api"
	"github.com/hangarvm/hangar/pkg/migration/tunnel"
)

// Between two nodes' handlers a migration stream is one TLS connection (MigrationTLS). The
// source handler speaks first, one line (package tunnel's line rules):
//
//	"probe <migration uid> <vmi uid>"            is the target launcher ready?
//	"stream <migration uid> <vmi uid> <stream>"  connect this to the target launcher's stream
//
// and the target handler answers "ok" or "error <message>"; after "ok" a stream carries
// its bytes both ways. The target handler admits a connection only for an instance whose
// status.migrationState names this node the target and the peer's node the source, for the
// migration it names, while that migration is under way.
const (
	verbProbe  = "probe"
	verbStream = "stream"
)

// migrationHeaderWait bounds the source's first line and the target launcher's answer.
const migrationHeaderWait = 10 * time.Second

// ServeMigrations accepts migration streams from other nodes' handlers on ln until ctx ends.
func (c *Controller) ServeMigrations(ctx context.Context, ln net.Listener) error {
	if c.cfg.Migration == nil {
		return errors.New("no migration identity configured")
	}
	tln := tls.NewListener(ln, c.cfg.Migration.ServerConfig())
	go func() {
		<-ctx.Done()
		tln.Close()
	}()
	for {
		conn, err := tln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go c.serveMigrationConn(conn.(*tls.Conn))
	}
}

func (c *Controller) serveMigrationConn(conn *tls.Conn) {
	_ = conn.SetDeadline(time.Now().Add(migrationHeaderWait))
	refuse := func(msg string) {
		_ = tunnel.WriteLine(conn, tunnel.AnswerError, msg)
		conn.Close()
	}
	if err := conn.Handshake(); err != nil {
		conn.Close()
		return
	}
	peer, err := peerNode(conn)
	if err != nil {
		conn.Close()
		return
	}
	verb, rest, err := tunnel.ReadLine(conn)
	if err != nil {
		conn.Close()
		return
	}
	args := strings.Fields(rest)
	if (verb != verbProbe || len(args) != 2) && (verb != verbStream || len(args) != 3) {
		refuse("bad request")
		return
	}
	l, err := c.incomingLauncher(peer, args[0], types.UID(args[1]))
	if err != nil {
		klog.InfoS("refused a migration connection", "peer", peer, "migration", args[0], "err", err)
		refuse(err.Error())
		return
	}
	if verb == verbProbe {
		st, err := l.client.State(context.Background())
		switch {
		case err != nil:
			refuse("target launcher: " + err.Error())
		case st.Phase != api.PhaseIncoming || st.Migration == nil || st.Migration.UID != args[0]:
			refuse(fmt.Sprintf("target not ready (%s)", st.Phase))
		default:
			_ = tunnel.WriteLine(conn, tunnel.AnswerOK)
			conn.Close()
		}
		return
	}
	stream, err := tunnel.ParseStream(args[2])
	if err != nil {
		refuse(err.Error())
		return
	}
	lc, err := l.dir.Dial(tunnel.SocketName)
	if err != nil {
		refuse("target launcher: " + err.Error())
		return
	}
	_ = lc.SetDeadline(time.Now().Add(migrationHeaderWait))
	if err := tunnel.WriteLine(lc, tunnel.VerbTarget, string(stream)); err != nil {
		lc.Close()
		refuse("target launcher: " + err.Error())
		return
	}
	if err := tunnel.ReadAnswer(lc); err != nil {
		lc.Close()
		refuse("target launcher: " + err.Error())
		return
	}
	if err := tunnel.WriteLine(conn, tunnel.AnswerOK); err != nil {
		lc.Close()
		conn.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	_ = lc.SetDeadline(time.Time{})
	klog.V(2).InfoS("migration stream in", "stream", stream, "migration", args[0], "from", peer)
	tunnel.Splice(conn, lc)
}

// incomingLauncher is the target launcher of the migration that peer may send streams for.
func (c *Controller) incomingLauncher(peer, migrationUID string, vmiUID types.UID) (*launcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.targets {
		if t.vmiUID != vmiUID {
			continue
		}
		ms := t.state
		switch {
		case ms == nil || string(ms.MigrationUid) != migrationUID:
			return nil, errors.New("no such migration to this node")
		case ms.SourceNode != peer:
			return nil, fmt.Errorf("the migration comes from node %q, not %q", ms.SourceNode, peer)
		case ms.Completed || ms.Failed || ms.AbortRequested:
			return nil, errors.New("the migration is over")
		case t.launcher == nil:
			return nil, errors.New("target launcher not found yet")
		}
		return t.launcher, nil
	}
	return nil, errors.New("no such migration to this node")
}

// outgoingMigration carries one migration's streams out of this node's source launcher:
// it keeps a few idle upstreams open on the launcher's migration socket, and each one the
// launcher puts to use goes on to the target node's handler.
type outgoingMigration struct {
	uid     string
	cancel  context.CancelFunc
	done    chan struct{}
	started bool // the launcher was told to migrate
}

const (
	// idleUpstreams is how many upstreams wait in a source launcher: one per stream at once.
	idleUpstreams = 3
	// maxStreams bounds what one migration may have the handler open on its behalf.
	maxStreams = 16
)

// startOutgoing starts carrying vmi's migration out of this node's launcher l.
func (c *Controller) startOutgoing(vmi *v1.VirtualMachineInstance, l *launcher, ms *v1.VirtualMachineInstanceMigrationState) *outgoingMigration {
	ctx, cancel := context.WithCancel(c.baseContext())
	o := &outgoingMigration{uid: string(ms.MigrationUid), cancel: cancel, done: make(chan struct{})}
	target, address, vmiUID := ms.TargetNode, ms.TargetNodeAddress, vmi.UID
	streams := make(chan struct{}, maxStreams)
	var wg sync.WaitGroup
	for range idleUpstreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := c.upstream(ctx, l, o.uid, vmiUID, target, address, streams); err != nil && ctx.Err() == nil {
					klog.V(2).InfoS("migration upstream", "vmi", l.key, "err", err)
					select {
					case <-ctx.Done():
					case <-time.After(500 * time.Millisecond):
					}
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(o.done)
	}()
	return o
}

// upstream opens one upstream in the launcher, waits for the launcher to use it, and
// carries that stream to the target (in the background, so the caller opens the next).
func (c *Controller) upstream(ctx context.Context, l *launcher, migrationUID string, vmiUID types.UID, target, address string, streams chan struct{}) error {
	up, err := l.dir.Dial(tunnel.SocketName)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	if err := tunnel.WriteLine(up, tunnel.VerbSource, migrationUID); err != nil {
		up.Close()
		return err
	}
	name, _, err := tunnel.ReadLine(up) // idle until the launcher needs a stream
	if err != nil {
		up.Close()
		return err
	}
	stream, err := tunnel.ParseStream(name)
	if err != nil {
		up.Close()
		return err
	}
	select {
	case streams <- struct{}{}:
	default:
		up.Close()
		return fmt.Errorf("more than %d streams for one migration", maxStreams)
	}
	down, err := c.dialTarget(ctx, address, target, verbStream, migrationUID, string(vmiUID), string(stream))
	if err != nil {
		up.Close()
		<-streams
		return err
	}
	stop()
	go func() {
		defer func() { <-streams }()
		klog.V(2).InfoS("migration stream out", "stream", stream, "migration", migrationUID, "to", target)
		tunnel.Splice(up, down)
	}()
	return nil
}

// dialTarget opens a connection to the target's handler and makes a request on it.
func (c *Controller) dialTarget(ctx context.Context, address, target string, args ...string) (*tls.Conn, error) {
	if c.cfg.Migration == nil {
		return nil, errors.New("no migration identity configured")
	}
	conn, err := c.cfg.Migration.Dial(ctx, address, target)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(migrationHeaderWait))
	if err := tunnel.WriteLine(conn, args...); err != nil {
		conn.Close()
		return nil, err
	}
	if err := tunnel.ReadAnswer(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("node %s: %w", target, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// probeTarget says whether the target launcher is ready for the migration.
func (c *Controller) probeTarget(ctx context.Context, vmi *v1.VirtualMachineInstance, ms *v1.VirtualMachineInstanceMigrationState) error {
	conn, err := c.dialTarget(ctx, ms.TargetNodeAddress, ms.TargetNode, verbProbe, string(ms.MigrationUid), string(vmi.UID))
	if err != nil {
		return err
	}
	return conn.Close()
}
