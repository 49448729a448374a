//go:build libvirt

package node

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowserVNCClient runs the RFB client of virtctl's browser page (pkg/virtctl/vncweb)
// under node against a real QEMU's VNC server: handshake, a full framebuffer, key and
// pointer events.
func TestBrowserVNCClient(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node (Debian's nodejs, hack/install-node-deps.sh)")
	dir := t.TempDir()
	sock := filepath.Join(dir, "vnc.sock")
	// A stopped machine (-S) still has a display: nothing to boot, nothing to wait for.
	qemu := exec.Command("qemu-system-x86_64", "-machine", "pc", "-accel", "tcg", "-m", "32", "-nodefaults",
		"-vga", "std", "-display", "none", "-vnc", "unix:"+sock, "-S", "-name", "hangar-vnc-test")
	qemu.Stderr = os.Stderr
	require.NoError(t, qemu.Start())
	t.Cleanup(func() {
		_ = qemu.Process.Kill()
		_ = qemu.Wait()
	})
	require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 10*time.Second, 50*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "../../pkg/virtctl/vncweb/testdata/rfb-check.js", sock).Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(t, err, stderr)
	var seen struct {
		Width, Height, Covered, Updates int
		Name                            string
		Opaque, Open                    bool
		Keysyms                         map[string]int
	}
	require.NoError(t, json.Unmarshal(out, &seen), string(out))
	assert.Positive(t, seen.Width)
	assert.Positive(t, seen.Height)
	assert.Equal(t, "QEMU (hangar-vnc-test)", seen.Name, "the desktop name from ServerInit")
	assert.GreaterOrEqual(t, seen.Covered, seen.Width*seen.Height, "the first update covers the screen")
	assert.True(t, seen.Opaque, "pixels are made opaque for the canvas")
	assert.True(t, seen.Open, "QEMU keeps the session after key and pointer events")
	assert.Equal(t, map[string]int{"a": 0x61, "Enter": 0xff0d, "F5": 0xffc2, "ShiftLeft": 0xffe1, "euro": 0x010020ac}, seen.Keysyms)
}
