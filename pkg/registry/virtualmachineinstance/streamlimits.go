package virtualmachineinstance

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Defaults of StreamLimits.
const (
	// DefaultStreamsPerUser: the consoles, VNC displays and screenshots one user has open at
	// once through one virt-api.
	DefaultStreamsPerUser = 16
	// DefaultStreamsPerInstance: those of one instance, whoever opened them (the launcher
	// serves one console client at a time anyway).
	DefaultStreamsPerInstance = 8
	// StreamWriteTimeout bounds a write to the client of a stream: a client that stops
	// reading holds the stream (and the node agent's end of it) no longer than this.
	StreamWriteTimeout = 30 * time.Second
)

// StreamLimits bound what the streams of one user, and of one instance, hold of virt-api and
// of the node agents behind it: a goroutine pair, buffers and a connection to the node each.
// They count per virt-api replica.
type StreamLimits struct {
	perUser, perInstance int

	mu        sync.Mutex
	users     map[string]int
	instances map[string]int
}

// NewStreamLimits returns limits of perUser streams per user and perInstance per instance.
func NewStreamLimits(perUser, perInstance int) *StreamLimits {
	return &StreamLimits{perUser: perUser, perInstance: perInstance, users: map[string]int{}, instances: map[string]int{}}
}

// open counts a stream of user to instance (namespace/name), or refuses it with a 429 when
// either has its limit open already; what it returns closes the stream's count.
func (l *StreamLimits) open(user, instance string) (func(), error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.users[user] >= l.perUser:
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("%s has %d consoles, VNC displays and screenshots open, the most one user may", user, l.perUser), 10)
	case l.instances[instance] >= l.perInstance:
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("virtualmachineinstance %s has %d consoles, VNC displays and screenshots open, the most one instance may", instance, l.perInstance), 10)
	}
	l.users[user]++
	l.instances[instance]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.users[user]--; l.users[user] == 0 {
				delete(l.users, user)
			}
			if l.instances[instance]--; l.instances[instance] == 0 {
				delete(l.instances, instance)
			}
		})
	}, nil
}

// writeDeadlines gives the connection a stream hijacks a deadline on every write.
type writeDeadlines struct {
	http.ResponseWriter
	timeout time.Duration
}

// Hijack hands out the client's connection, each write to it bounded by the timeout.
func (w writeDeadlines) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return deadlineConn{Conn: conn, timeout: w.timeout}, rw, nil
}

// Unwrap lets http.ResponseController reach the server's writer (Flush for screenshots).
func (w writeDeadlines) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c deadlineConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
