package handler

import (
	"context"
	"net"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// launcher is the handler's view of one instance's launcher: its pod's socket directory, its
// client, the latest state it reported, and the long poll that keeps that state fresh.
type launcher struct {
	key    string
	uid    types.UID // the instance's
	dir    *podsockets.Dir
	client *api.Client

	mu        sync.Mutex
	state     api.State
	synced    bool   // Sync answered, or the launcher was already running (handler restart)
	stopping  bool   // Shutdown sent
	stopGrace *int64 // with this grace period
	// handedOver are the hotplugged volumes handed to the launcher, with the attachment pod
	// each came from; hotplugSynced the hotplugged volumes of its last sync (hotplug.go).
	handedOver    map[string]types.UID
	hotplugSynced string
	unwatch       func() // ends the wait for the command socket (socketWatch)
	cancel        context.CancelFunc
	done          chan struct{}
}

// newLauncher tracks the launcher whose pod's socket directory is dir; every connection to
// it is checked to reach a process of that pod (podsockets), and its calls are within calls.
func newLauncher(key string, uid types.UID, dir *podsockets.Dir, calls *api.CallLimits) *launcher {
	l := &launcher{key: key, uid: uid, dir: dir}
	l.client = calls.Client(string(uid), func(context.Context) (net.Conn, error) {
		return dir.Dial(api.SocketName)
	})
	return l
}

// socketPresent says whether the launcher's command socket exists (the launcher is up).
func (l *launcher) socketPresent() bool {
	return l.dir.Stat(api.SocketName) == nil
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
			if err == nil {
				err = checkEvents(ev, l.uid)
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				// The launcher exits only after it reported an end; a launcher that stays
				// unreachable died some other way (OOM kill, pod deleted).
				if failures >= 10 && !l.socketPresent() || failures >= 60 {
					klog.InfoS("launcher unreachable; the guest is gone", "vmi", l.key, "err", err)
					l.setState(api.State{Phase: api.PhaseFailed, Reason: ReasonLauncherGone, Message: truncate(err.Error(), maxMessage)})
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
	cancel, done, unwatch := l.cancel, l.done, l.unwatch
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if unwatch != nil {
		unwatch()
	}
	l.client.Close()
	l.dir.Close()
}
