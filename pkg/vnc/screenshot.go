// Package vnc takes screenshots of a guest's display: a minimal RFB 3.8 client (no
// authentication, raw encoding) that asks QEMU's VNC server for one full frame.
package vnc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"net"
	"time"
)

// The server is the guest's display in a launcher pod: the tenant's. Nothing it announces may
// make the client allocate or read without bound.
const (
	// MaxPixels bounds the framebuffer: 3840x2160 (4K UHD) fits, and QEMU's standard VGA
	// (16 MiB of video memory) cannot show more than 4 Mi pixels. 32 MiB as RGBA.
	MaxPixels = 8 << 20
	// maxNameLength bounds the desktop name, which is skipped.
	maxNameLength = 4 << 10
	// maxCutText bounds a clipboard message, which is skipped.
	maxCutText = 1 << 20
)

// Screenshot reads one full frame from an RFB server on conn.
func Screenshot(conn net.Conn, timeout time.Duration) (*image.RGBA, error) {
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	width, height, err := handshake(conn)
	if err != nil {
		return nil, err
	}
	if width == 0 || height == 0 || int(width)*int(height) > MaxPixels {
		return nil, fmt.Errorf("vnc: the server announces a %dx%d display; at most %d pixels are taken", width, height, MaxPixels)
	}
	// 32-bit true colour, little endian, red in bits 16-23: one pixel is B, G, R, X.
	setPixelFormat := []byte{0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0}
	setEncodings := []byte{2, 0, 0, 1, 0, 0, 0, 0} // one encoding: raw
	update := []byte{3, 0, 0, 0, 0, 0, byte(width >> 8), byte(width), byte(height >> 8), byte(height)}
	for _, msg := range [][]byte{setPixelFormat, setEncodings, update} {
		if _, err := conn.Write(msg); err != nil {
			return nil, fmt.Errorf("vnc: write: %w", err)
		}
	}
	img := image.NewRGBA(image.Rect(0, 0, int(width), int(height)))
	if err := readFrame(conn, img); err != nil {
		return nil, err
	}
	return img, nil
}

// handshake agrees on RFB 3.8 without security and returns the framebuffer's size.
func handshake(conn net.Conn) (width, height uint16, err error) {
	version := make([]byte, 12)
	if _, err := io.ReadFull(conn, version); err != nil {
		return 0, 0, fmt.Errorf("vnc: read version: %w", err)
	}
	if string(version[:4]) != "RFB " {
		return 0, 0, fmt.Errorf("vnc: not an RFB server: %q", version)
	}
	if _, err := conn.Write([]byte("RFB 003.008\n")); err != nil {
		return 0, 0, err
	}
	var count uint8
	if err := binary.Read(conn, binary.BigEndian, &count); err != nil {
		return 0, 0, fmt.Errorf("vnc: read security types: %w", err)
	}
	if count == 0 {
		return 0, 0, errors.New("vnc: the server refused the connection")
	}
	types := make([]byte, count)
	if _, err := io.ReadFull(conn, types); err != nil {
		return 0, 0, err
	}
	none := false
	for _, t := range types {
		none = none || t == 1
	}
	if !none {
		return 0, 0, fmt.Errorf("vnc: the server wants authentication (types %v)", types)
	}
	if _, err := conn.Write([]byte{1}); err != nil {
		return 0, 0, err
	}
	var result uint32
	if err := binary.Read(conn, binary.BigEndian, &result); err != nil || result != 0 {
		return 0, 0, fmt.Errorf("vnc: security handshake failed (%d, %v)", result, err)
	}
	if _, err := conn.Write([]byte{1}); err != nil { // ClientInit: share the display
		return 0, 0, err
	}
	var init struct {
		Width, Height uint16
		PixelFormat   [16]byte
		NameLength    uint32
	}
	if err := binary.Read(conn, binary.BigEndian, &init); err != nil {
		return 0, 0, fmt.Errorf("vnc: read server init: %w", err)
	}
	if init.NameLength > maxNameLength {
		return 0, 0, fmt.Errorf("vnc: desktop name of %d bytes", init.NameLength)
	}
	if _, err := io.CopyN(io.Discard, conn, int64(init.NameLength)); err != nil {
		return 0, 0, err
	}
	return init.Width, init.Height, nil
}

// readFrame reads server messages until a framebuffer update has filled img.
func readFrame(conn net.Conn, img *image.RGBA) error {
	for {
		var kind uint8
		if err := binary.Read(conn, binary.BigEndian, &kind); err != nil {
			return fmt.Errorf("vnc: read message: %w", err)
		}
		switch kind {
		case 0: // FramebufferUpdate
			var header struct {
				Padding uint8
				Rects   uint16
			}
			if err := binary.Read(conn, binary.BigEndian, &header); err != nil {
				return err
			}
			for i := 0; i < int(header.Rects); i++ {
				if err := readRect(conn, img); err != nil {
					return err
				}
			}
			return nil
		case 2: // Bell
		case 3: // ServerCutText
			var cut struct {
				Padding [3]byte
				Length  uint32
			}
			if err := binary.Read(conn, binary.BigEndian, &cut); err != nil {
				return err
			}
			if cut.Length > maxCutText {
				return fmt.Errorf("vnc: clipboard message of %d bytes", cut.Length)
			}
			if _, err := io.CopyN(io.Discard, conn, int64(cut.Length)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("vnc: unexpected message type %d", kind)
		}
	}
}

func readRect(conn net.Conn, img *image.RGBA) error {
	var rect struct {
		X, Y, W, H uint16
		Encoding   int32
	}
	if err := binary.Read(conn, binary.BigEndian, &rect); err != nil {
		return err
	}
	if rect.Encoding != 0 {
		return fmt.Errorf("vnc: unexpected encoding %d", rect.Encoding)
	}
	b := img.Bounds()
	if int(rect.X)+int(rect.W) > b.Dx() || int(rect.Y)+int(rect.H) > b.Dy() {
		return fmt.Errorf("vnc: rectangle %dx%d at %d,%d outside the %dx%d display", rect.W, rect.H, rect.X, rect.Y, b.Dx(), b.Dy())
	}
	row := make([]byte, int(rect.W)*4)
	for y := 0; y < int(rect.H); y++ {
		if _, err := io.ReadFull(conn, row); err != nil {
			return fmt.Errorf("vnc: read pixels: %w", err)
		}
		o := img.PixOffset(int(rect.X), int(rect.Y)+y)
		for x := 0; x < int(rect.W); x++ {
			img.Pix[o], img.Pix[o+1], img.Pix[o+2], img.Pix[o+3] = row[x*4+2], row[x*4+1], row[x*4], 255
			o += 4
		}
	}
	return nil
}
