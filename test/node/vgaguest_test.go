//go:build libvirt

package node

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vgaGuest is the kernelBoot test guest booted by bare QEMU from Debian's bzImage with a
// VESA console of 1024×768 (vga=0x318): what a person sees over VNC, a shell on tty1. Its
// serial console (ttyS0, a shell too) is how the test drives and watches it.
type vgaGuest struct {
	t        *testing.T // the test that started it
	vnc      string     // QEMU's VNC socket
	monitor  string     // the HMP monitor's socket
	serial   net.Conn
	mu       sync.Mutex
	output   bytes.Buffer // everything the serial console printed
	outputCh chan struct{}
}

func startVGAGuest(t *testing.T) *vgaGuest {
	t.Helper()
	env := testEnv(t)
	kernels, _ := filepath.Glob(filepath.Join(env.root, "_output", "guest", "debian-kernel", "boot", "vmlinuz-*"))
	require.NotEmpty(t, kernels, "Debian's kernel, unpacked by hack/guest/debian-kernel.sh")
	sort.Strings(kernels)
	dir, err := os.MkdirTemp("", "vga") // short: unix socket paths
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	g := &vgaGuest{t: t, vnc: filepath.Join(dir, "vnc"), monitor: filepath.Join(dir, "mon"), outputCh: make(chan struct{}, 1)}
	serial := filepath.Join(dir, "serial")
	qemu := exec.Command("qemu-system-x86_64", "-machine", "pc", "-accel", "tcg", "-m", "192", "-nodefaults",
		"-vga", "std", "-display", "none", "-vnc", "unix:"+g.vnc, "-name", "hangar-vnc-test",
		"-monitor", "unix:"+g.monitor+",server=on,wait=off",
		"-chardev", "socket,id=serial,path="+serial+",server=on,wait=off", "-serial", "chardev:serial",
		"-kernel", kernels[len(kernels)-1], "-initrd", filepath.Join(env.kernelBootRoot, "boot", "initramfs.cpio.gz"),
		// Kernel messages on the serial console only: the screen holds what the test puts there.
		"-append", "console=ttyS0 no_timer_check vga=0x318")
	qemu.Stderr = os.Stderr
	require.NoError(t, qemu.Start())
	t.Cleanup(func() {
		_ = qemu.Process.Kill()
		_ = qemu.Wait()
	})
	require.Eventually(t, func() bool {
		g.serial, err = net.Dial("unix", serial)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "QEMU's serial socket")
	t.Cleanup(func() { g.serial.Close() })
	go func() {
		r := bufio.NewReader(g.serial)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			g.mu.Lock()
			g.output.Write(buf[:n])
			g.mu.Unlock()
			select {
			case g.outputCh <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	g.waitSerial(t, banner, 1, 120*time.Second)
	return g
}

// waitSerial waits until the serial console has printed s at least n times.
func (g *vgaGuest) waitSerial(t *testing.T, s string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		g.mu.Lock()
		count := strings.Count(g.output.String(), s)
		g.mu.Unlock()
		if count >= n {
			return
		}
		select {
		case <-g.outputCh:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			g.mu.Lock()
			defer g.mu.Unlock()
			t.Fatalf("no %q (%d times) on the serial console in %v; it printed:\n%s", s, n, timeout, tail(g.output.String(), 2000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// run types a command on the serial console's shell and waits until it has run.
func (g *vgaGuest) run(command string) {
	g.t.Helper()
	marker := fmt.Sprintf("done-%d", time.Now().UnixNano())
	_, err := fmt.Fprintf(g.serial, "%s; echo %s-$((1+1))\n", command, marker)
	require.NoError(g.t, err)
	g.waitSerial(g.t, marker+"-2", 1, 60*time.Second)
}

// showText fills the screen with the kernel's log (static: no cursor blinking) and waits
// until it has been drawn.
func (g *vgaGuest) showText() {
	g.t.Helper()
	g.run("echo 0 > /sys/class/graphics/fbcon/cursor_blink; dmesg > /dev/tty1")
}

// screendump is the display as QEMU has it (HMP screendump).
func (g *vgaGuest) screendump() image.Image {
	g.t.Helper()
	file := filepath.Join(g.t.TempDir(), "screen.ppm")
	conn, err := net.Dial("unix", g.monitor)
	require.NoError(g.t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	readPrompt := func() {
		var seen []byte
		for !bytes.HasSuffix(seen, []byte("(qemu) ")) {
			b, err := r.ReadByte()
			require.NoError(g.t, err, "monitor: %s", seen)
			seen = append(seen, b)
		}
	}
	readPrompt()
	_, err = fmt.Fprintf(conn, "screendump %s\n", file)
	require.NoError(g.t, err)
	readPrompt()
	f, err := os.Open(file)
	require.NoError(g.t, err)
	defer f.Close()
	img, err := readPPM(f)
	require.NoError(g.t, err)
	return img
}

// readPPM reads a binary PPM (P6, maxval 255), as QEMU's screendump writes it.
func readPPM(r io.Reader) (image.Image, error) {
	br := bufio.NewReader(r)
	var w, h, maxval int
	if _, err := fmt.Fscanf(br, "P6\n%d %d\n%d", &w, &h, &maxval); err != nil {
		return nil, fmt.Errorf("PPM header: %w", err)
	}
	if _, err := br.ReadByte(); err != nil || maxval != 255 {
		return nil, fmt.Errorf("PPM: maxval %d", maxval)
	}
	px := make([]byte, w*h*3)
	if _, err := io.ReadFull(br, px); err != nil {
		return nil, fmt.Errorf("PPM pixels: %w", err)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		img.Set(i%w, i/w, color.RGBA{px[i*3], px[i*3+1], px[i*3+2], 255})
	}
	return img, nil
}

// rgbaImage is a w×h image of RGBA bytes (the RFB client's frame, test/browser).
func rgbaImage(w, h int, rgba []byte) image.Image {
	return &image.RGBA{Pix: rgba, Stride: w * 4, Rect: image.Rect(0, 0, w, h)}
}
