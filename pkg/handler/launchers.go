package handler

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// launcher is the handler's view of one instance's launcher: its client, the latest state it
// reported, and the long poll that keeps that state fresh.
type launcher struct {
	key    string
	dir    string
	client *api.Client

	mu        sync.Mutex
	state     api.State
	synced    bool   // Sync answered, or the launcher was already running (handler restart)
	stopping  bool   // Shutdown sent
	stopGrace *int64 // with this grace period
	cancel    context.CancelFunc
	done      chan struct{}
}

func newLauncher(key, dir string) *launcher {
	return &launcher{key: key, dir: dir, client: api.NewClient(filepath.Join(dir, api.SocketName))}
}

// socketPresent says whether the launcher's command socket exists (the pod is up).
func (l *launcher) socketPresent() bool {
	_, err := os.Stat(filepath.Join(l.dir, api.SocketName))
	return err == nil
}

func (l *launcher) State() api.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

func (l *launcher) setState(s api.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.Phase.Final() {
		return
	}
	l.state = s
}

// watch long-polls the launcher's events, storing each new state and calling changed,
// until ctx ends or the state is final. A launcher that disappears before it reported an
// end is reported as failed.
func (l *launcher) watch(ctx context.Context, changed func()) {
	l.mu.Lock()
	if l.cancel != nil {
		l.mu.Unlock()
		return
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	after := l.state.Seq
	l.mu.Unlock()
	go func() {
		defer close(l.done)
		failures := 0
		for ctx.Err() == nil {
			ev, err := l.client.Events(ctx, after, 30*time.Second)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				// The launcher exits only after it reported an end; a launcher that stays
				// unreachable died some other way (OOM kill, pod deleted).
				if failures >= 10 && !l.socketPresent() || failures >= 60 {
					klog.InfoS("launcher unreachable; the guest is gone", "vmi", l.key, "err", err)
					l.setState(api.State{Phase: api.PhaseFailed, Reason: ReasonLauncherGone, Message: err.Error()})
					changed()
					return
				}
				time.Sleep(500 * time.Millisecond)
				continue
			}
			failures = 0
			if ev.State.Seq != after || len(ev.Events) > 0 {
				after = ev.State.Seq
				l.setState(ev.State)
				changed()
			}
			if ev.State.Phase.Final() {
				return
			}
		}
	}()
}

func (l *launcher) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	l.client.Close()
}

// peerPID is the process id of whoever listens on a unix socket (SO_PEERCRED), in the
// handler's pid namespace: the launcher, whose network namespace the handler sets up.
func peerPID(socket string) (int, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	if cred.Pid <= 0 {
		return 0, errors.New("no peer pid")
	}
	return int(cred.Pid), nil
}
