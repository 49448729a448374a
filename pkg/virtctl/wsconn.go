package virtctl

import (
	"io"
	"net"
	"sync"
	"time"

	gwebsocket "github.com/gorilla/websocket"
)

// wsConn is a stream websocket as a net.Conn: what is written goes as one binary message,
// what is read comes from the messages in turn (a datagram each for a UDP forward).
type wsConn struct {
	ws *gwebsocket.Conn

	readMu  sync.Mutex
	reader  io.Reader
	writeMu sync.Mutex
}

var _ net.Conn = &wsConn{}

func newWSConn(ws *gwebsocket.Conn) *wsConn { return &wsConn{ws: ws} }

func (c *wsConn) Read(b []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		if c.reader == nil {
			_, r, err := c.ws.NextReader()
			if err != nil {
				if gwebsocket.IsCloseError(err, gwebsocket.CloseNormalClosure) {
					return 0, io.EOF
				}
				return 0, err
			}
			c.reader = r
		}
		n, err := c.reader.Read(b)
		if err == io.EOF {
			c.reader = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

// readMessage reads one whole message: a datagram of a UDP forward.
func (c *wsConn) readMessage() ([]byte, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	_, data, err := c.ws.ReadMessage()
	return data, err
}

func (c *wsConn) Write(b []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.ws.WriteMessage(gwebsocket.BinaryMessage, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close sends a normal close, then closes the connection.
func (c *wsConn) Close() error {
	c.writeMu.Lock()
	_ = c.ws.WriteControl(gwebsocket.CloseMessage,
		gwebsocket.FormatCloseMessage(gwebsocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.writeMu.Unlock()
	return c.ws.Close()
}

func (c *wsConn) LocalAddr() net.Addr                { return c.ws.LocalAddr() }
func (c *wsConn) RemoteAddr() net.Addr               { return c.ws.RemoteAddr() }
func (c *wsConn) SetDeadline(t time.Time) error      { return c.ws.NetConn().SetDeadline(t) }
func (c *wsConn) SetReadDeadline(t time.Time) error  { return c.ws.SetReadDeadline(t) }
func (c *wsConn) SetWriteDeadline(t time.Time) error { return c.ws.SetWriteDeadline(t) }
