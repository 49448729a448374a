// Package browser drives virtctl's VNC page in Debian's Chromium for the node and e2e tests
// (vnc-page.js with playwright-core; hack/install-node-deps.sh installs both).
package browser

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// VNCPage is one Chromium with the VNC page.
type VNCPage struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     *json.Encoder
	out    *bufio.Scanner
	Width  int
	Height int
	Status string
}

// dir is this package's directory: the script and the pinned package lock are beside it.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// StartVNCPage starts Chromium and opens the page at url: it returns once the page has drawn
// the first framebuffer update. Chromium ends with the test.
func StartVNCPage(t testing.TB, url string) *VNCPage {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node (hack/install-node-deps.sh)")
	modules := filepath.Join(dir(), "..", "..", "_output", "browser", "node_modules")
	_, err = os.Stat(filepath.Join(modules, "playwright-core"))
	require.NoError(t, err, "playwright-core (hack/install-node-deps.sh installs it)")
	p := &VNCPage{t: t, cmd: exec.Command(node, filepath.Join(dir(), "vnc-page.js"))}
	p.cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	p.cmd.Stderr = os.Stderr
	stdin, err := p.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	p.in, p.out = json.NewEncoder(stdin), bufio.NewScanner(stdout)
	t.Cleanup(func() {
		_ = p.in.Encode(map[string]string{"op": "quit"})
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
	var opened struct {
		Width, Height int
		Status        string
	}
	p.do(map[string]string{"op": "open", "url": url}, &opened)
	p.Width, p.Height, p.Status = opened.Width, opened.Height, opened.Status
	return p
}

// do sends one command and reads its answer into answer.
func (p *VNCPage) do(cmd map[string]string, answer any) {
	p.t.Helper()
	require.NoError(p.t, p.in.Encode(cmd))
	require.True(p.t, p.out.Scan(), "vnc-page.js ended: %v", p.out.Err())
	var failed struct{ Error string }
	require.NoError(p.t, json.Unmarshal(p.out.Bytes(), &failed))
	require.Empty(p.t, failed.Error, "%s in the page", cmd["op"])
	if answer != nil {
		require.NoError(p.t, json.Unmarshal(p.out.Bytes(), answer))
	}
}

// Screen is what the canvas shows now.
func (p *VNCPage) Screen() image.Image {
	p.t.Helper()
	file := filepath.Join(p.t.TempDir(), "canvas.png")
	p.do(map[string]string{"op": "shot", "path": file}, nil)
	f, err := os.Open(file)
	require.NoError(p.t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(p.t, err)
	return img
}

// Type types text on the page's screen as a person would, Shift and all ("\n" is Enter).
func (p *VNCPage) Type(text string) {
	p.t.Helper()
	p.do(map[string]string{"op": "type", "text": text}, nil)
}

// CtrlAltDel clicks the page's Ctrl+Alt+Del button.
func (p *VNCPage) CtrlAltDel() {
	p.t.Helper()
	p.do(map[string]string{"op": "cad"}, nil)
}

// DiffPixels counts the pixels whose colour differs between a and b (of the same size).
func DiffPixels(a, b image.Image) (int, error) {
	if a.Bounds().Size() != b.Bounds().Size() {
		return 0, fmt.Errorf("sizes differ: %v and %v", a.Bounds().Size(), b.Bounds().Size())
	}
	diff := 0
	for y := 0; y < a.Bounds().Dy(); y++ {
		for x := 0; x < a.Bounds().Dx(); x++ {
			r1, g1, b1, _ := a.At(a.Bounds().Min.X+x, a.Bounds().Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(b.Bounds().Min.X+x, b.Bounds().Min.Y+y).RGBA()
			if r1>>8 != r2>>8 || g1>>8 != g2>>8 || b1>>8 != b2>>8 {
				diff++
			}
		}
	}
	return diff, nil
}
