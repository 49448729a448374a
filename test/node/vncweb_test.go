//go:build libvirt

package node

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/pkg/virtctl/vncweb"
	"github.com/hangarvm/hangar/test/browser"
)

// encodingsOf splits an encoding list ("zrle,copyrect,raw,desktopsize").
func encodingsOf(list string) []string { return strings.Split(list, ",") }

// TestBrowserVNC shows a guest's 1024×768 text console to the RFB client of virtctl's
// browser page (pkg/virtctl/vncweb) against a real QEMU, in Chromium: the client alone, with
// ZRLE and with raw, then the whole page through vncweb's token, Origin check and bridge.
func TestBrowserVNC(t *testing.T) {
	g := startVGAGuest(t)
	g.showText()
	want := g.screendump()
	require.Equal(t, 1024, want.Bounds().Dx())

	t.Run("client in chromium", func(t *testing.T) {
		frames := map[string]browser.RFBSeen{}
		for _, encodings := range []string{"zrle,copyrect,raw,desktopsize", "raw,copyrect,desktopsize"} {
			seen := browser.RFBCheck(t, g.vnc, encodingsOf(encodings), 0)
			assert.Equal(t, 1024, seen.Width)
			assert.Equal(t, 768, seen.Height)
			assert.Equal(t, "QEMU (hangar-vnc-test)", seen.Name, "the desktop name from ServerInit")
			assert.GreaterOrEqual(t, seen.Covered, seen.Width*seen.Height, "the first update covers the screen")
			assert.True(t, seen.Opaque, "pixels are made opaque for the canvas")
			assert.True(t, seen.Open, "QEMU keeps the session after key and pointer events")
			assert.Equal(t, map[string]int{"a": 0x61, "Enter": 0xff0d, "F5": 0xffc2, "ShiftLeft": 0xffe1, "euro": 0x010020ac}, seen.Keysyms)
			diff, err := browser.DiffPixels(want, rgbaImage(seen.Width, seen.Height, seen.Frame))
			require.NoError(t, err)
			assert.Zero(t, diff, "%s: pixels that differ from QEMU's screen", encodings)
			frames[strings.SplitN(encodings, ",", 2)[0]] = seen
		}
		zrle, raw := frames["zrle"], frames["raw"]
		assert.Positive(t, zrle.Rects["16"], "QEMU answers in ZRLE: %v", zrle.Rects)
		assert.Zero(t, zrle.Rects["0"], "no raw rectangle when ZRLE is asked for")
		assert.Less(t, zrle.FirstScreenBytes*20, raw.FirstScreenBytes, "ZRLE: at least 20 times fewer bytes than raw")
		t.Logf("first full screen: %d bytes in ZRLE, %d raw", zrle.FirstScreenBytes, raw.FirstScreenBytes)
	})

	t.Run("page in chromium", func(t *testing.T) {
		// The API's VNC stream stands in as a websocket relaying QEMU's socket; what it
		// writes is what the browser gets.
		var toBrowser atomic.Int64
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := (&gwebsocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer ws.Close()
			vnc, err := net.Dial("unix", g.vnc)
			if err != nil {
				return
			}
			defer vnc.Close()
			go func() {
				for {
					_, data, err := ws.ReadMessage()
					if err != nil || func() error { _, err := vnc.Write(data); return err }() != nil {
						vnc.Close()
						return
					}
				}
			}()
			buf := make([]byte, 64<<10)
			for {
				n, err := vnc.Read(buf)
				if n > 0 {
					toBrowser.Add(int64(n))
					if ws.WriteMessage(gwebsocket.BinaryMessage, buf[:n]) != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}))
		defer api.Close()
		token, err := vncweb.NewToken()
		require.NoError(t, err)
		page := httptest.NewServer(vncweb.Handler(token, func(ctx context.Context) (*gwebsocket.Conn, error) {
			conn, _, err := gwebsocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(api.URL, "http"), nil)
			return conn, err
		}))
		defer page.Close()

		p := browser.StartVNCPage(t, page.URL+"/"+token+"/")
		assert.Equal(t, 1024, p.Width)
		assert.Equal(t, 768, p.Height)
		assert.Contains(t, p.Status, "QEMU (hangar-vnc-test) · 1024×768")
		firstScreen := toBrowser.Load()
		assert.Less(t, firstScreen, int64(1024*768*4/20), "the first screen reached the browser compressed")
		t.Logf("first full screen to the browser: %d bytes", firstScreen)

		// The page shows the guest's screen, pixel for pixel.
		var diff int
		require.Eventually(t, func() bool {
			diff, err = browser.DiffPixels(want, p.Screen())
			require.NoError(t, err)
			return diff == 0
		}, 10*time.Second, 200*time.Millisecond, "the canvas shows QEMU's screen (%d pixels differ)", diff)

		// Typing reaches the guest's shell on tty1 (Shift for ">" included).
		p.Type("echo typed-in-the-browser-$((6*7)) >/dev/ttyS0\n")
		g.waitSerial(t, "typed-in-the-browser-42", 1, 30*time.Second)
		// And what it printed reaches the canvas.
		require.Eventually(t, func() bool {
			diff, err = browser.DiffPixels(want, p.Screen())
			require.NoError(t, err)
			return diff > 0
		}, 10*time.Second, 200*time.Millisecond, "the typed line shows on the canvas")

		// Ctrl+Alt+Del: busybox init reboots the guest, which boots again.
		p.CtrlAltDel()
		g.waitSerial(t, banner, 2, 120*time.Second)
	})
}
