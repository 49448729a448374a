package handler

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/handler/podsockets"
	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// socketWatch wakes an instance's sync the moment its launcher's command socket appears
// (inotify on the pod's socket directory), so a guest starts as soon as its launcher listens,
// not at the next look.
//
// The directory is watched through the handler's own descriptor of it (/proc/self/fd/N, which
// podsockets opened with openat2), never by a path the pod could swap. A launcher can make
// events in its own directory only: they wake its own instance's sync, which the workqueue
// folds together.
type socketWatch struct {
	w *fsnotify.Watcher

	mu    sync.Mutex
	ready map[string]func() // by watched path
}

func newSocketWatch() (*socketWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	return &socketWatch{w: w, ready: map[string]func(){}}, nil
}

// add calls ready whenever the launcher's command socket appears in dir, until remove.
func (s *socketWatch) add(dir *podsockets.Dir, ready func()) (remove func(), err error) {
	path := dir.DescriptorPath()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.Add(path); err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir.Path(), err)
	}
	s.ready[path] = ready
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.ready[path]; ok {
			delete(s.ready, path)
			_ = s.w.Remove(path) // before the descriptor closes and its number is reused
		}
	}, nil
}

// run delivers the events until ctx ends. When the kernel's event queue overflowed, every
// watched instance is woken: one of them may have missed its socket.
func (s *socketWatch) run(ctx context.Context) {
	defer s.w.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-s.w.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) != api.SocketName || !ev.Has(fsnotify.Create) {
				continue
			}
			s.mu.Lock()
			ready := s.ready[filepath.Dir(ev.Name)]
			s.mu.Unlock()
			if ready != nil {
				ready()
			}
		case err, ok := <-s.w.Errors:
			if !ok {
				return
			}
			klog.ErrorS(err, "socket watch")
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				s.mu.Lock()
				all := make([]func(), 0, len(s.ready))
				for _, r := range s.ready {
					all = append(all, r)
				}
				s.mu.Unlock()
				for _, r := range all {
					r()
				}
			}
		}
	}
}
