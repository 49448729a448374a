package virtualmachineinstance

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestStreamLimits(t *testing.T) {
	l := NewStreamLimits(2, 1)
	closeA, err := l.open("alice", "ns/a")
	require.NoError(t, err)
	_, err = l.open("bob", "ns/a")
	assert.True(t, apierrors.IsTooManyRequests(err), "one per instance: %v", err)
	closeB, err := l.open("alice", "ns/b")
	require.NoError(t, err)
	_, err = l.open("alice", "ns/c")
	assert.True(t, apierrors.IsTooManyRequests(err), "two per user: %v", err)
	assert.Contains(t, err.Error(), "alice has 2 consoles")

	closeA()
	closeA() // twice: counted once
	closeB()
	assert.Empty(t, l.users)
	assert.Empty(t, l.instances)
	var none *StreamLimits
	_, err = none.open("alice", "ns/a")
	assert.NoError(t, err, "nil limits limit nothing")
}

// A client that stops reading holds its stream no longer than the write timeout: the writes
// to its hijacked connection fail once the deadline passes.
func TestStreamWritesHaveADeadline(t *testing.T) {
	failed := make(chan time.Duration, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := writeDeadlines{ResponseWriter: w, timeout: 200 * time.Millisecond}.Hijack()
		require.NoError(t, err)
		defer conn.Close()
		chunk := make([]byte, 64<<10)
		start := time.Now()
		for {
			if _, err := conn.Write(chunk); err != nil {
				failed <- time.Since(start)
				return
			}
		}
	}))
	defer srv.Close()
	client, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	_, err = client.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	// ... and never reads.
	select {
	case took := <-failed:
		assert.Less(t, took, 5*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the writes to a client that does not read never failed")
	}
}
