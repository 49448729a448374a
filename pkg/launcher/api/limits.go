package api

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// Defaults of CallLimits.
const (
	// DefaultCallsPerInstance: the event long poll, a state read, a scrape's statistics and a
	// user's command at once.
	DefaultCallsPerInstance = 4
	// DefaultAnswersPerNode: answers read and decoded at once by one handler. Each holds at
	// most MaxAnswer bytes and what checkShape lets them decode into.
	DefaultAnswersPerNode = 8
	// AnswerReadTimeout bounds the read of an answer's body once its headers came: a launcher
	// writes its answer at once over a unix socket, so only a launcher that dribbles it out
	// (holding one of the node's answer slots) needs longer.
	AnswerReadTimeout = 2 * time.Second
)

// CallLimits bound what launchers can make a handler hold: the calls to one instance's
// launcher in flight at once (a launcher that never answers ties up only its own), and the
// answers read and decoded at once on the node (so many launchers answering big at the same
// time cannot add up past the handler's memory). Waiting for a slot ends with the call's
// deadline.
type CallLimits struct {
	perInstance int
	node        chan struct{}

	mu        sync.Mutex
	instances map[string]*instanceSlots
}

type instanceSlots struct {
	slots   chan struct{}
	clients int
}

// NewCallLimits returns limits of perInstance calls per instance and perNode answers at once.
func NewCallLimits(perInstance, perNode int) *CallLimits {
	return &CallLimits{perInstance: perInstance, node: make(chan struct{}, perNode), instances: map[string]*instanceSlots{}}
}

// Client returns a client of instance uid's launcher whose connections come from dial; every
// client of the same instance shares its slots until closed. Nil limits limit nothing.
func (l *CallLimits) Client(uid string, dial func(ctx context.Context) (net.Conn, error)) *Client {
	if l == nil {
		return NewDialClient(dial)
	}
	l.mu.Lock()
	s := l.instances[uid]
	if s == nil {
		s = &instanceSlots{slots: make(chan struct{}, l.perInstance)}
		l.instances[uid] = s
	}
	s.clients++
	l.mu.Unlock()
	c := NewDialClient(dial)
	c.limits, c.instance = l, s.slots
	c.release = func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if s.clients--; s.clients == 0 {
			delete(l.instances, uid)
		}
	}
	return c
}

// acquire takes a slot of ch, or gives up with ctx; what it returns gives the slot back.
func acquire(ctx context.Context, ch chan struct{}, what string) (func(), error) {
	if ch == nil {
		return func() {}, nil
	}
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a free %s: %w", what, ctx.Err())
	}
}
