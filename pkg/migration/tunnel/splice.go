package tunnel

import (
	"io"
	"net"
	"sync"
)

// bufSize is the copy buffer per direction: migration streams are bulk transfers.
const bufSize = 256 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// Splice copies a to b and b to a until both directions end, passing each end of stream on
// as a half-close where the connection allows it (unix and TCP connections, TLS), then
// closes both. It returns the bytes copied each way.
func Splice(a, b net.Conn) (aToB, bToA int64) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		bToA = pipe(a, b)
	}()
	aToB = pipe(b, a)
	wg.Wait()
	a.Close()
	b.Close()
	return aToB, bToA
}

// pipe copies src to dst, then half-closes dst (or closes both when it cannot, so the other
// direction ends too).
func pipe(dst, src net.Conn) int64 {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	n, err := io.CopyBuffer(dst, src, *bp)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		if cw.CloseWrite() == nil {
			return n
		}
	}
	dst.Close()
	src.Close()
	return n
}
