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
	serial net.Conn
	log    *os.File

	mu     sync.Mutex
	client net.Conn
	ln     net.Listener
	done   chan struct{}
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
			if r.log != nil {
				_, _ = r.log.Write(buf[:n])
			}
			r.mu.Lock()
			c := r.client
			r.mu.Unlock()
			if c != nil {
				// A client that does not read must not stall the guest's console.
				_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, werr := c.Write(buf[:n]); werr != nil {
					r.drop(c)
				}
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
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		old := r.client
		r.client = c
		r.mu.Unlock()
		if old != nil {
			old.Close() // the newest console wins, as with virtctl console
		}
		go r.toGuest(c)
	}
}

func (r *consoleRelay) toGuest(c net.Conn) {
	_, _ = io.Copy(r.serial, c)
	r.drop(c)
}

func (r *consoleRelay) drop(c net.Conn) {
	r.mu.Lock()
	if r.client == c {
		r.client = nil
	}
	r.mu.Unlock()
	c.Close()
}

// Close closes the relay socket, the client and the serial connection.
func (r *consoleRelay) Close() {
	r.ln.Close()
	r.mu.Lock()
	if r.client != nil {
		r.client.Close()
	}
	r.mu.Unlock()
	r.serial.Close()
	<-r.done
	if r.log != nil {
		r.log.Close()
	}
}
