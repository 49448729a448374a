package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/hangarvm/hangar/pkg/launcher/api"
)

// maxEventWait bounds a long poll, so a handler that went away frees its request soon.
const maxEventWait = 60 * time.Second

// Handler serves the protocol of package api.
func (l *Launcher) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathHealthz, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.Health{Version: api.Version, UID: l.cfg.UID})
	})
	mux.HandleFunc("GET "+api.PathState, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, l.State())
	})
	mux.HandleFunc("GET "+api.PathEvents, func(w http.ResponseWriter, r *http.Request) {
		after, err := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		if err != nil && r.URL.Query().Get("after") != "" {
			writeError(w, http.StatusBadRequest, fmt.Errorf("after: %w", err))
			return
		}
		wait := 30 * time.Second
		if s := r.URL.Query().Get("wait"); s != "" {
			if wait, err = time.ParseDuration(s); err != nil {
				writeError(w, http.StatusBadRequest, fmt.Errorf("wait: %w", err))
				return
			}
		}
		wait = min(max(wait, 0), maxEventWait)
		writeJSON(w, http.StatusOK, l.Events(r.Context(), after, wait))
	})
	mux.HandleFunc("GET "+api.PathStats, func(w http.ResponseWriter, r *http.Request) {
		stats, err := l.Stats(r.Context())
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, errConflict) {
				status = http.StatusConflict
			}
			writeError(w, status, err)
			return
		}
		writeJSON(w, http.StatusOK, stats)
	})
	mux.HandleFunc("PUT "+api.PathSync, func(w http.ResponseWriter, r *http.Request) {
		var req api.SyncRequest
		if err := decode(r, &req); err != nil || req.VMI == nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("sync needs an instance: %v", err))
			return
		}
		// The start must not be cut short by a handler that gives up waiting: a half-started
		// domain is worse than a late answer.
		state, err := l.Sync(context.WithoutCancel(r.Context()), req)
		reply(w, state, err)
	})
	mux.HandleFunc("POST "+api.PathPause, func(w http.ResponseWriter, r *http.Request) {
		state, err := l.Pause()
		reply(w, state, err)
	})
	mux.HandleFunc("POST "+api.PathUnpause, func(w http.ResponseWriter, r *http.Request) {
		state, err := l.Unpause()
		reply(w, state, err)
	})
	mux.HandleFunc("POST "+api.PathSoftReboot, func(w http.ResponseWriter, r *http.Request) {
		state, err := l.SoftReboot()
		reply(w, state, err)
	})
	mux.HandleFunc("POST "+api.PathReset, func(w http.ResponseWriter, r *http.Request) {
		state, err := l.Reset()
		reply(w, state, err)
	})
	mux.HandleFunc("PUT "+api.PathMigrationTarget, func(w http.ResponseWriter, r *http.Request) {
		var req api.MigrationTargetRequest
		if err := decode(r, &req); err != nil || req.VMI == nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("a migration target needs an instance: %v", err))
			return
		}
		state, err := l.PrepareTarget(context.WithoutCancel(r.Context()), req)
		reply(w, state, err)
	})
	mux.HandleFunc("POST "+api.PathMigrate, func(w http.ResponseWriter, r *http.Request) {
		var req api.MigrateRequest
		if err := decode(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		state, err := l.Migrate(req)
		reply(w, state, err)
	})
	mux.HandleFunc("POST "+api.PathMigrationAbort, func(w http.ResponseWriter, r *http.Request) {
		var req api.AbortRequest
		if err := decode(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		state, err := l.AbortMigration(req.UID)
		reply(w, state, err)
	})
	mux.HandleFunc("POST "+api.PathShutdown, func(w http.ResponseWriter, r *http.Request) {
		var req api.ShutdownRequest
		if err := decode(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		var grace *time.Duration
		if req.GracePeriodSeconds != nil {
			g := time.Duration(*req.GracePeriodSeconds) * time.Second
			grace = &g
		}
		state, err := l.Shutdown(grace)
		reply(w, state, err)
	})
	mux.HandleFunc("GET "+api.PathGuestInfo, func(w http.ResponseWriter, r *http.Request) {
		info, err := l.GuestInfo()
		if err != nil {
			reply(w, l.State(), err)
			return
		}
		writeJSON(w, http.StatusOK, info)
	})
	mux.HandleFunc("POST "+api.PathFreeze, func(w http.ResponseWriter, r *http.Request) {
		var req api.FreezeRequest
		if err := decode(r, &req); err != nil || req.UnfreezeTimeoutSeconds < 0 || req.UnfreezeTimeoutSeconds > maxUnfreezeTimeout {
			writeError(w, http.StatusBadRequest, fmt.Errorf("freeze needs an unfreeze timeout of 0 to %d seconds: %v", maxUnfreezeTimeout, err))
			return
		}
		state, err := l.Freeze(time.Duration(req.UnfreezeTimeoutSeconds) * time.Second)
		reply(w, state, err)
	})
	mux.HandleFunc("POST "+api.PathUnfreeze, func(w http.ResponseWriter, r *http.Request) {
		state, err := l.Unfreeze()
		reply(w, state, err)
	})
	return mux
}

// maxUnfreezeTimeout is the longest unfreeze timeout: KubeVirt's is an int32 of seconds.
const maxUnfreezeTimeout = 1<<31 - 1

// Serve listens on <SocketDir>/launcher.sock for commands, on the migration socket for the
// migration tunnel and on the handover socket for hotplugged volumes until ctx ends.
func (l *Launcher) Serve(ctx context.Context) error {
	ln, err := listenPrivate(l.SocketPath())
	if err != nil {
		return err
	}
	mig, err := listenPrivate(l.MigrationSocketPath())
	if err != nil {
		ln.Close()
		return err
	}
	defer os.Remove(l.MigrationSocketPath())
	go l.serveTunnel(ctx, mig)
	handovers, err := listenPrivate(l.HandoverSocketPath())
	if err != nil {
		ln.Close()
		mig.Close()
		return err
	}
	defer os.Remove(l.HandoverSocketPath())
	go l.serveHandovers(ctx, handovers)
	srv := &http.Server{Handler: l.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	err = srv.Serve(ln)
	_ = os.Remove(l.SocketPath())
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// listenPrivate listens on a unix socket only the launcher's user and root (the handler)
// may connect to.
func listenPrivate(path string) (net.Listener, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// SocketPath is the command socket.
func (l *Launcher) SocketPath() string {
	return l.cfg.SocketDir + "/" + api.SocketName
}

func decode(r *http.Request, out any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return nil
	}
	return json.Unmarshal(body, out)
}

func reply(w http.ResponseWriter, state api.State, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, state)
	case errors.Is(err, errConflict):
		writeError(w, http.StatusConflict, err)
	case errors.Is(err, errInvalid):
		writeError(w, http.StatusBadRequest, err)
	default:
		writeError(w, http.StatusInternalServerError, err)
	}
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, api.Error{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
