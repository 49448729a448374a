package launcher

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// consoleRelay holds QEMU's serial socket for the guest's whole life and relays it to one
// client at a time on a socket of its own: the handler's console connections come and go,
// the guest's output is never lost before the first one (it goes to the log file too).
type consoleRelay struct {
	serial  net.Conn
	log     *os.File
	logSize int64 // written by fromGuest only

	mu     sync.Mutex
	client *consoleClient
	ln     net.Listener
	done   chan struct{}
}

// maxLog is the size at which the console log starts over as console.log.1 (one old file
// kept): a chatty guest must not fill the container's disk.
const maxLog = 4 << 20

// writeLog appends guest output to the console log, rotating it at maxLog.
func (r *consoleRelay) writeLog(b []byte) {
	if r.log == nil {
		return
	}
	if r.logSize+int64(len(b)) > maxLog {
		path := r.log.Name()
		r.log.Close()
		_ = os.Rename(path, path+".1")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			r.log = nil
			return
		}
		r.log, r.logSize = f, 0
	}
	n, _ := r.log.Write(b)
	r.logSize += int64(n)
}

// maxBacklog is how much guest output a client may fall behind before it is dropped: the
// guest's console never waits for a client.
const maxBacklog = 1 << 20

// consoleClient is one client and the guest output not yet written to it. A writer drains
// the backlog in as few writes as it can: QEMU hands over output in small pieces, and many
// small writes exhaust a unix socket's send buffer long before its bytes do.
type consoleClient struct {
	conn    net.Conn
	mu      sync.Mutex
	backlog []byte
	wake    chan struct{}
	closed  bool
}

func newConsoleClient(c net.Conn) *consoleClient {
	cc := &consoleClient{conn: c, wake: make(chan struct{}, 1)}
	go cc.writer()
	return cc
}

// queue adds guest output; false when the client has fallen too far behind.
func (cc *consoleClient) queue(b []byte) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed || len(cc.backlog)+len(b) > maxBacklog {
		return false
	}
	cc.backlog = append(cc.backlog, b...)
	select {
	case cc.wake <- struct{}{}:
	default:
	}
	return true
}

func (cc *consoleClient) writer() {
	for range cc.wake {
		cc.mu.Lock()
		b := cc.backlog
		cc.backlog = nil
		closed := cc.closed
		cc.mu.Unlock()
		if closed {
			return
		}
		if len(b) > 0 {
			if _, err := cc.conn.Write(b); err != nil {
				klog.V(2).InfoS("console client dropped", "err", err)
				cc.close()
				return
			}
		}
	}
}

func (cc *consoleClient) close() {
	cc.mu.Lock()
	if !cc.closed {
		cc.closed = true
		close(cc.wake)
	}
	cc.mu.Unlock()
	cc.conn.Close()
}

// dialSerial dials QEMU's serial socket, which exists once QEMU runs; retried briefly.
func dialSerial(path string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startConsoleRelay relays serial to clients of a new socket at listenPath; logPath, when
// set, receives a copy of everything the guest writes.
func startConsoleRelay(serial net.Conn, listenPath, logPath string) (*consoleRelay, error) {
	_ = os.Remove(listenPath)
	ln, err := net.Listen("unix", listenPath)
	if err != nil {
		return nil, err
	}
	r := &consoleRelay{serial: serial, ln: ln, done: make(chan struct{})}
	if logPath != "" {
		if r.log, err = os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			ln.Close()
			return nil, err
		}
		if fi, err := r.log.Stat(); err == nil {
			r.logSize = fi.Size()
		}
	}
	go r.fromGuest()
	go r.accept()
	return r, nil
}

func (r *consoleRelay) fromGuest() {
	defer close(r.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.serial.Read(buf)
		if n > 0 {
			r.writeLog(buf[:n])
			r.mu.Lock()
			c := r.client
			r.mu.Unlock()
			if c != nil && !c.queue(buf[:n]) {
				klog.InfoS("console client too far behind; dropped", "backlog", maxBacklog)
				r.drop(c)
			}
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && err != io.EOF {
				klog.V(2).InfoS("serial console closed", "err", err)
			}
			return
		}
	}
}

func (r *consoleRelay) accept() {
	for {
		conn, err := r.ln.Accept()
		if err != nil {
			return
		}
		c := newConsoleClient(conn)
		r.mu.Lock()
		old := r.client
		r.client = c
		r.mu.Unlock()
		if old != nil {
			old.close() // the newest console wins, as with virtctl console
		}
		go r.toGuest(c)
	}
}

func (r *consoleRelay) toGuest(c *consoleClient) {
	_, err := io.Copy(r.serial, c.conn)
	klog.V(2).InfoS("console client gone", "err", err)
	r.drop(c)
}

func (r *consoleRelay) drop(c *consoleClient) {
	r.mu.Lock()
	if r.client == c {
		r.client = nil
	}
	r.mu.Unlock()
	c.close()
}

// Close closes the relay socket, the client and the serial connection.
func (r *consoleRelay) Close() {
	r.ln.Close()
	r.mu.Lock()
	if r.client != nil {
		r.client.close()
	}
	r.mu.Unlock()
	r.serial.Close()
	<-r.done
	if r.log != nil {
		r.log.Close()
	}
}
