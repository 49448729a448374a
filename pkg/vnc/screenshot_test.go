package vnc

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServer speaks the server side of RFB 3.8 for a 4x2 display: the left half red, the
// right half blue, sent as one raw rectangle after a bell.
func fakeServer(t *testing.T, conn net.Conn) {
	defer conn.Close()
	_, _ = conn.Write([]byte("RFB 003.008\n"))
	version := make([]byte, 12)
	_, _ = io.ReadFull(conn, version)
	_, _ = conn.Write([]byte{1, 1})           // one security type: None
	_, _ = io.ReadFull(conn, make([]byte, 1)) // chosen type
	_, _ = conn.Write([]byte{0, 0, 0, 0})     // OK
	_, _ = io.ReadFull(conn, make([]byte, 1)) // ClientInit
	init := append([]byte{0, 4, 0, 2}, make([]byte, 16)...)
	init = append(init, 0, 0, 0, 4)
	init = append(init, []byte("test")...)
	_, _ = conn.Write(init)
	_, _ = io.ReadFull(conn, make([]byte, 20+8+10)) // SetPixelFormat, SetEncodings, request
	_, _ = conn.Write([]byte{2})                    // a bell first
	_, _ = conn.Write([]byte{0, 0, 0, 1})           // one rectangle
	rect := make([]byte, 12)
	binary.BigEndian.PutUint16(rect[4:], 4)
	binary.BigEndian.PutUint16(rect[6:], 2)
	_, _ = conn.Write(rect)
	for y := 0; y < 2; y++ {
		for x := 0; x < 4; x++ {
			if x < 2 {
				_, _ = conn.Write([]byte{0, 0, 255, 0}) // B G R X: red
			} else {
				_, _ = conn.Write([]byte{255, 0, 0, 0}) // blue
			}
		}
	}
}

func TestScreenshot(t *testing.T) {
	client, server := net.Pipe()
	go fakeServer(t, server)
	img, err := Screenshot(client, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 4, img.Bounds().Dx())
	assert.Equal(t, 2, img.Bounds().Dy())
	r, g, b, _ := img.At(0, 1).RGBA()
	assert.Equal(t, []uint32{0xffff, 0, 0}, []uint32{r, g, b}, "left is red")
	r, g, b, _ = img.At(3, 0).RGBA()
	assert.Equal(t, []uint32{0, 0, 0xffff}, []uint32{r, g, b}, "right is blue")
}

func TestScreenshotRefusesAuthentication(t *testing.T) {
	client, server := net.Pipe()
	go func() {
		defer server.Close()
		_, _ = server.Write([]byte("RFB 003.008\n"))
		_, _ = io.ReadFull(server, make([]byte, 12))
		_, _ = server.Write([]byte{1, 2}) // VNC authentication only
	}()
	_, err := Screenshot(client, 5*time.Second)
	assert.ErrorContains(t, err, "authentication")
}
