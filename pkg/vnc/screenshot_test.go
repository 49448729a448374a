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

// hostileServer completes the handshake announcing width x height and a desktop name of
// nameLength bytes, then sends what follows.
func hostileServer(conn net.Conn, width, height uint16, nameLength uint32, then []byte) {
	defer conn.Close()
	_, _ = conn.Write([]byte("RFB 003.008\n"))
	_, _ = io.ReadFull(conn, make([]byte, 12))
	_, _ = conn.Write([]byte{1, 1})
	_, _ = io.ReadFull(conn, make([]byte, 1))
	_, _ = conn.Write([]byte{0, 0, 0, 0})
	_, _ = io.ReadFull(conn, make([]byte, 1))
	init := make([]byte, 24)
	binary.BigEndian.PutUint16(init[0:], width)
	binary.BigEndian.PutUint16(init[2:], height)
	binary.BigEndian.PutUint32(init[20:], nameLength)
	_, _ = conn.Write(init)
	if nameLength > 4096 {
		return // the client must give up before reading the name
	}
	if nameLength > 0 { // a zero-length write on a net.Pipe waits for a reader
		_, _ = conn.Write(make([]byte, nameLength))
	}
	_, _ = io.ReadFull(conn, make([]byte, 20+8+10))
	_, _ = conn.Write(then)
}

// TestScreenshotRefusesHostileServers: a launcher pod is the tenant's, and so is the VNC
// server the handler takes screenshots from. Nothing it announces makes the client allocate
// beyond MaxPixels or read without bound; each is refused with an error.
func TestScreenshotRefusesHostileServers(t *testing.T) {
	rect := func(x, y, w, h uint16) []byte {
		b := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint16(b[4:], x)
		binary.BigEndian.PutUint16(b[6:], y)
		binary.BigEndian.PutUint16(b[8:], w)
		binary.BigEndian.PutUint16(b[10:], h)
		return b
	}
	tests := []struct {
		name          string
		width, height uint16
		nameLength    uint32
		then          []byte
		want          string
	}{
		{"a 65535x65535 framebuffer (17 GB as RGBA)", 65535, 65535, 0, nil, "65535x65535 display"},
		{"just over the pixel bound", 4097, 2048, 0, nil, "4097x2048 display"},
		{"an empty framebuffer", 0, 600, 0, nil, "0x600 display"},
		{"a 4 GB desktop name", 800, 600, 0xffffffff, nil, "desktop name"},
		{"a 1 GB clipboard message", 800, 600, 0, []byte{3, 0, 0, 0, 0x40, 0, 0, 0}, "clipboard message"},
		{"a rectangle outside the display", 800, 600, 0, rect(700, 0, 200, 10), "outside the 800x600 display"},
		{"a 65535x65535 rectangle", 800, 600, 0, rect(0, 0, 65535, 65535), "outside the 800x600 display"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := net.Pipe()
			go hostileServer(server, tt.width, tt.height, tt.nameLength, tt.then)
			img, err := Screenshot(client, 5*time.Second)
			assert.Nil(t, img)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestScreenshotAtTheBound: a 4K UHD display is within the bound.
func TestScreenshotAtTheBound(t *testing.T) {
	client, server := net.Pipe()
	const w, h = 3840, 2160
	go func() {
		var frame []byte
		frame = append(frame, 0, 0, 0, 1, 0, 0, 0, 0)
		frame = binary.BigEndian.AppendUint16(frame, w)
		frame = binary.BigEndian.AppendUint16(frame, h)
		frame = append(frame, 0, 0, 0, 0)
		frame = append(frame, make([]byte, w*h*4)...)
		hostileServer(server, w, h, 0, frame)
	}()
	img, err := Screenshot(client, 20*time.Second)
	require.NoError(t, err)
	assert.Equal(t, w, img.Bounds().Dx())
}
