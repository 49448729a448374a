package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// DefaultTimeout bounds every call but the event long poll, which gets its wait plus this.
const DefaultTimeout = 30 * time.Second

// Client calls one launcher.
type Client struct {
	http *http.Client
	// limits and instance hold the node's and the instance's slots (CallLimits.Client); nil
	// for a client without limits.
	limits   *CallLimits
	instance chan struct{}
	release  func()
	once     sync.Once
}

// NewClient returns a client of the launcher listening on socket, dialled by its path: for
// tests and tools that trust the path. virt-handler uses NewDialClient.
func NewClient(socket string) *Client {
	return NewDialClient(func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	})
}

// NewDialClient returns a client whose every connection comes from dial.
func NewDialClient(dial func(ctx context.Context) (net.Conn, error)) *Client {
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx)
		},
		MaxIdleConns:    2,
		IdleConnTimeout: 90 * time.Second,
		// A launcher is the tenant's: its headers are as untrusted as its body.
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &Client{http: &http.Client{Transport: transport}}
}

// MaxAnswer bounds what the handler reads of one answer: a launcher (the tenant's) cannot
// make it allocate more.
const MaxAnswer = 1 << 20

// Close drops idle connections and gives back the client's share of its instance's slots.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	if c.release != nil {
		c.once.Do(c.release)
	}
}

// Healthz checks that the launcher answers and says which instance it runs.
func (c *Client) Healthz(ctx context.Context) (Health, error) {
	var h Health
	return h, c.call(ctx, DefaultTimeout, http.MethodGet, PathHealthz, nil, &h)
}

// Sync hands the launcher its instance; it defines and starts the guest once.
func (c *Client) Sync(ctx context.Context, req SyncRequest) (State, error) {
	var s State
	// Starting includes preparing disks (qemu-img) and libvirt's define+start.
	return s, c.call(ctx, 2*DefaultTimeout, http.MethodPut, PathSync, req, &s)
}

// State is the guest's current state.
func (c *Client) State(ctx context.Context) (State, error) {
	var s State
	return s, c.call(ctx, DefaultTimeout, http.MethodGet, PathState, nil, &s)
}

// Events waits up to wait for events after sequence number after.
func (c *Client) Events(ctx context.Context, after uint64, wait time.Duration) (Events, error) {
	var e Events
	q := url.Values{"after": {strconv.FormatUint(after, 10)}, "wait": {wait.String()}}
	return e, c.call(ctx, wait+DefaultTimeout, http.MethodGet, PathEvents+"?"+q.Encode(), nil, &e)
}

// StatsTimeout bounds a statistics call: a scrape must not wait for a slow launcher.
const StatsTimeout = time.Second

// Stats reads the guest's statistics; ctx's deadline applies when shorter than StatsTimeout.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	return s, c.call(ctx, StatsTimeout, http.MethodGet, PathStats, nil, &s)
}

// Pause pauses the guest.
func (c *Client) Pause(ctx context.Context) (State, error) { return c.post(ctx, PathPause, nil) }

// Unpause resumes a paused guest.
func (c *Client) Unpause(ctx context.Context) (State, error) { return c.post(ctx, PathUnpause, nil) }

// SoftReboot asks the guest to reboot (ACPI).
func (c *Client) SoftReboot(ctx context.Context) (State, error) {
	return c.post(ctx, PathSoftReboot, nil)
}

// Shutdown asks the guest to power off and destroys it after the grace period; it returns
// at once.
func (c *Client) Shutdown(ctx context.Context, grace *int64) (State, error) {
	return c.post(ctx, PathShutdown, ShutdownRequest{GracePeriodSeconds: grace})
}

// GuestInfo is the guest agent's report of its guest.
func (c *Client) GuestInfo(ctx context.Context) (v1.VirtualMachineInstanceGuestAgentInfo, error) {
	var info v1.VirtualMachineInstanceGuestAgentInfo
	return info, c.call(ctx, DefaultTimeout, http.MethodGet, PathGuestInfo, nil, &info)
}

// Freeze freezes the guest's file systems through the guest agent, and thaws them after
// unfreezeTimeoutSeconds (0: never) unless Unfreeze comes first.
func (c *Client) Freeze(ctx context.Context, unfreezeTimeoutSeconds int64) (State, error) {
	return c.post(ctx, PathFreeze, FreezeRequest{UnfreezeTimeoutSeconds: unfreezeTimeoutSeconds})
}

// Unfreeze thaws the guest's file systems.
func (c *Client) Unfreeze(ctx context.Context) (State, error) { return c.post(ctx, PathUnfreeze, nil) }

// PrepareMigrationTarget makes the launcher of a migration's target pod ready to receive
// the guest.
func (c *Client) PrepareMigrationTarget(ctx context.Context, req MigrationTargetRequest) (State, error) {
	var s State
	return s, c.call(ctx, 2*DefaultTimeout, http.MethodPut, PathMigrationTarget, req, &s)
}

// Migrate starts the migration of the guest; it returns at once.
func (c *Client) Migrate(ctx context.Context, req MigrateRequest) (State, error) {
	return c.post(ctx, PathMigrate, req)
}

// AbortMigration cancels the migration under way.
func (c *Client) AbortMigration(ctx context.Context, migrationUID string) (State, error) {
	return c.post(ctx, PathMigrationAbort, AbortRequest{UID: migrationUID})
}

func (c *Client) post(ctx context.Context, path string, body any) (State, error) {
	var s State
	return s, c.call(ctx, DefaultTimeout, http.MethodPost, path, body, &s)
}

func (c *Client) call(ctx context.Context, timeout time.Duration, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done, err := acquire(ctx, c.instance, "call slot of the instance")
	if err != nil {
		return fmt.Errorf("launcher %s %s: %w", method, path, err)
	}
	defer done()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://launcher"+path, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("launcher %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, status, err := c.readAnswer(ctx, resp)
	if err != nil {
		return fmt.Errorf("launcher %s %s: %w", method, path, err)
	}
	if status/100 != 2 {
		var e Error
		if decodeAnswer(data, &e) == nil && e.Error != "" {
			return &CallError{Status: status, Message: e.Error}
		}
		return &CallError{Status: status, Message: string(data[:min(len(data), 1024)])}
	}
	if err := decodeAnswer(data, out); err != nil {
		return fmt.Errorf("launcher %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// readAnswer reads an answer's body, at most MaxAnswer bytes within AnswerReadTimeout, in
// one of the node's answer slots, which the decoding that follows in the caller still
// counts on: the slot is held until call returns.
func (c *Client) readAnswer(ctx context.Context, resp *http.Response) ([]byte, int, error) {
	var node chan struct{}
	if c.limits != nil {
		node = c.limits.node
	}
	done, err := acquire(ctx, node, "answer slot of the node")
	if err != nil {
		return nil, 0, err
	}
	// Held through the decoding: released when the call's context is cancelled at return.
	context.AfterFunc(ctx, done)
	stop := time.AfterFunc(AnswerReadTimeout, func() { resp.Body.Close() })
	defer stop.Stop()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return nil, 0, err
	}
	if len(data) > MaxAnswer {
		return nil, 0, fmt.Errorf("answer larger than %d bytes", MaxAnswer)
	}
	return data, resp.StatusCode, nil
}

// CallError is a launcher's refusal.
type CallError struct {
	Status  int
	Message string
}

func (e *CallError) Error() string { return fmt.Sprintf("launcher: %d: %s", e.Status, e.Message) }
