package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveLauncher serves handler on a unix socket and returns its path.
func serveLauncher(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.sock")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return path
}

func dialUnix(path string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
}

func honest(w http.ResponseWriter, _ *http.Request) {
	_ = json.NewEncoder(w).Encode(State{UID: "b", Phase: PhaseRunning})
}

// A launcher that never answers ties up its own instance's calls, never another's.
func TestCallsPerInstance(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	silent := serveLauncher(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	limits := NewCallLimits(2, 4)
	a := limits.Client("a", dialUnix(silent))
	defer a.Close()
	for range 2 {
		go func() { _, _ = a.State(context.Background()) }()
	}
	time.Sleep(200 * time.Millisecond) // both calls are in flight

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := limits.Client("a", dialUnix(silent)).State(ctx)
	assert.ErrorContains(t, err, "waiting for a free call slot of the instance", "a third call to the same instance waits for a slot")

	b := limits.Client("b", dialUnix(serveLauncher(t, honest)))
	defer b.Close()
	start := time.Now()
	s, err := b.State(context.Background())
	require.NoError(t, err)
	assert.Equal(t, PhaseRunning, s.Phase)
	assert.Less(t, time.Since(start), time.Second, "another instance's call does not wait")
}

// A launcher that dribbles its answer out holds one of the node's answer slots for at most
// AnswerReadTimeout.
func TestAnswerReadIsBounded(t *testing.T) {
	dribble := serveLauncher(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"uid":`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	limits := NewCallLimits(4, 1)
	a := limits.Client("a", dialUnix(dribble))
	defer a.Close()
	start := time.Now()
	go func() { _, _ = a.State(context.Background()) }()
	time.Sleep(100 * time.Millisecond) // a holds the node's only answer slot

	b := limits.Client("b", dialUnix(serveLauncher(t, honest)))
	defer b.Close()
	_, err := b.State(context.Background())
	require.NoError(t, err)
	took := time.Since(start)
	assert.Less(t, took, AnswerReadTimeout+time.Second, "b waited for the slot only until a's read timed out")
	assert.GreaterOrEqual(t, took, AnswerReadTimeout-100*time.Millisecond)
}

// Every client of an instance shares its slots; the last one closed forgets them.
func TestCallLimitsForgetClosedInstances(t *testing.T) {
	limits := NewCallLimits(1, 1)
	c1, c2 := limits.Client("a", nil), limits.Client("a", nil)
	assert.Equal(t, c1.instance, c2.instance)
	c1.Close()
	c1.Close() // twice: counted once
	assert.Len(t, limits.instances, 1)
	c2.Close()
	assert.Empty(t, limits.instances)
	var none *CallLimits
	assert.Nil(t, none.Client("a", nil).instance, "nil limits limit nothing")
}
