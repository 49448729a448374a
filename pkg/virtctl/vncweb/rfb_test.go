package vncweb_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/pkg/virtctl/vncweb"
	"github.com/hangarvm/hangar/test/browser"
)

// The page's RFB client (static/rfb.js) runs in Chromium, the runtime it is written for, on
// bytes these tests make: tiles of every ZRLE subencoding written by hand, tiles cut anywhere
// and tiles that lie, a hostile server's announcements, and one zlib stream across rectangles
// and updates as QEMU writes it (compress/zlib with a sync flush per rectangle). test/node runs
// the same client against a real QEMU.

// rfbPage opens a page with rfb.js in Chromium and returns a function that evaluates a
// JavaScript expression there (awaiting a promise) and decodes its JSON value into out.
func rfbPage(t *testing.T) func(expr string, out any) {
	t.Helper()
	ctx := browser.New(t)
	mux := http.NewServeMux()
	mux.Handle("/rfb.js", http.FileServer(http.FS(vncweb.Files())))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, `<!DOCTYPE html><html><head><script src="rfb.js"></script></head><body></body></html>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")))
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](harness)))
	return func(expr string, out any) {
		t.Helper()
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
		require.NoError(t, err, "%.300s", expr)
		require.NoError(t, json.Unmarshal(raw, out), "%.300s", raw)
	}
}

// harness are the page's helpers: bytes from base64, and a client fed bytes that reports how
// it ended within a time limit.
const harness = `
window.bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
// outcome feeds a fresh client the server's bytes and says how it ended within ms: its
// error's message, "ended", or "still waiting".
window.outcome = async (b64, ms) => {
  const rfb = new RFB(() => {}, { resize() {}, raw() {}, copy() {}, updated() {} });
  rfb.receive(bytes(b64));
  const result = await Promise.race([
    rfb.done.then(() => "ended", (err) => "error: " + err.message),
    new Promise((r) => setTimeout(() => r("still waiting"), ms)),
  ]);
  rfb.close();
  return result;
};
`

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// js is v as a JavaScript literal; bytes as an array of numbers (JSON would make them base64).
func js(v any) string {
	if raw, ok := v.([]byte); ok {
		nums := make([]int, len(raw))
		for i, c := range raw {
			nums[i] = int(c)
		}
		v = nums
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var (
	red   = []byte{255, 0, 0}
	green = []byte{0, 255, 0}
	blue  = []byte{0, 0, 255}
	white = []byte{255, 255, 255}
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func repeat(c []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// tiles are one tile per subencoding (RFC 6143 7.7.6) and the pixels each decodes to.
var tiles = []struct {
	name string
	w, h int
	tile []byte
	want [][]byte
}{
	{"raw", 2, 2, cat([]byte{0}, red, green, blue, white), [][]byte{red, green, blue, white}},
	{"solid", 3, 1, cat([]byte{1}, blue), [][]byte{blue, blue, blue}},
	// Packed palette of 2 (1 bit per pixel, MSB first, each row padded to a byte).
	{"palette of 2", 3, 2, cat([]byte{2}, red, green, []byte{0b10100000, 0b01000000}), [][]byte{green, red, green, red, green, red}},
	// Of 3 (2 bits per pixel).
	{"palette of 3", 3, 1, cat([]byte{3}, red, green, blue, []byte{0b10010000}), [][]byte{blue, green, red}},
	// Of 5 (4 bits per pixel).
	{"palette of 5", 3, 1, cat([]byte{5}, red, green, blue, white, red, []byte{0x32, 0x10}), [][]byte{white, blue, green}},
	// Plain RLE: a CPIXEL and a run length (1 + the sum of bytes up to one that is not 255).
	{"plain RLE", 5, 52, cat([]byte{128}, red, []byte{1}, green, []byte{255, 2}), append(repeat(red, 2), repeat(green, 258)...)},
	// Palette RLE: an index alone is one pixel; with its top bit a run length follows.
	{"palette RLE", 5, 1, cat([]byte{130}, red, blue, []byte{1, 128 | 0, 2, 1}), [][]byte{blue, red, red, red, blue}},
}

func TestZRLETiles(t *testing.T) {
	eval := rfbPage(t)
	for _, tc := range tiles {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				End  int
				RGBA []int
			}
			eval(fmt.Sprintf(`((tile, w, h) => { const rgba = new Uint8Array(w * h * 4);
				const end = decodeTile(Uint8Array.from(tile), 0, rgba, w, 0, 0, w, h);
				return {end, rgba: Array.from(rgba)}; })(%s, %d, %d)`, js(tc.tile), tc.w, tc.h), &got)
			assert.Equal(t, len(tc.tile), got.End, "the tile ends where its data does")
			require.Len(t, got.RGBA, tc.w*tc.h*4)
			for i, want := range tc.want {
				px := got.RGBA[i*4 : i*4+4]
				assert.Equal(t, []int{int(want[0]), int(want[1]), int(want[2]), 255}, px, "pixel %d, opaque", i)
			}

			// Cut anywhere, the tile asks for more: the network may cut the stream anywhere.
			var ends []int
			eval(fmt.Sprintf(`((tile, w, h) => { const ends = [];
				for (let cut = 0; cut < tile.length; cut++) ends.push(decodeTile(Uint8Array.from(tile.slice(0, cut)), 0, new Uint8Array(w * h * 4), w, 0, 0, w, h));
				return ends; })(%s, %d, %d)`, js(tc.tile), tc.w, tc.h), &ends)
			for cut, end := range ends {
				assert.Equal(t, -1, end, "cut at %d", cut)
			}
		})
	}
}

func TestZRLETilesThatLie(t *testing.T) {
	eval := rfbPage(t)
	bad := []struct {
		name string
		tile []byte
	}{
		{"unused subencoding", []byte{17}},
		{"unused subencoding 129", []byte{129}},
		{"palette index past the palette", cat([]byte{3}, red, green, blue, []byte{0b11000000})},
		{"palette RLE index past the palette", cat([]byte{130}, red, blue, []byte{5})},
		{"run past the tile", cat([]byte{128}, red, []byte{9})},
	}
	for _, b := range bad {
		var msg string
		eval(fmt.Sprintf(`(() => { try { decodeTile(Uint8Array.from(%s), 0, new Uint8Array(3 * 4), 3, 0, 0, 3, 1); return "decoded"; }
			catch (err) { return err.message; } })()`, js(b.tile)), &msg)
		assert.Contains(t, msg, "ZRLE", b.name)
	}
}

// serverHello is what a VNC server without authentication sends up to its first update;
// nameLength is what ServerInit announces (the name itself is "test").
func serverHello(w, h int, nameLength uint32) []byte {
	init := make([]byte, 24+4)
	binary.BigEndian.PutUint16(init[0:], uint16(w))
	binary.BigEndian.PutUint16(init[2:], uint16(h))
	binary.BigEndian.PutUint32(init[20:], nameLength)
	copy(init[24:], "test")
	return cat([]byte("RFB 003.008\n"), []byte{1, 1}, make([]byte, 4), init)
}

// rectHeader is a FramebufferUpdate of one rectangle, up to its encoding's own data.
func rectHeader(x, y, w, h int, encoding int32, words ...uint32) []byte {
	b := make([]byte, 4+12+4*len(words))
	binary.BigEndian.PutUint16(b[2:], 1)
	binary.BigEndian.PutUint16(b[4:], uint16(x))
	binary.BigEndian.PutUint16(b[6:], uint16(y))
	binary.BigEndian.PutUint16(b[8:], uint16(w))
	binary.BigEndian.PutUint16(b[10:], uint16(h))
	binary.BigEndian.PutUint32(b[12:], uint32(encoding))
	for i, v := range words {
		binary.BigEndian.PutUint32(b[16+4*i:], v)
	}
	return b
}

// TestHostileServer: the guest's QEMU is the tenant's, and what it announces must not make the
// page allocate or wait for more than a display's worth. Each server sends only the header
// that lies: the client gives up on it at once, not waiting for the gigabytes it announces.
func TestHostileServer(t *testing.T) {
	eval := rfbPage(t)
	cutText := make([]byte, 8)
	cutText[0] = 3
	binary.BigEndian.PutUint32(cutText[4:], 1<<30)
	copyFrom := func(sx, sy int) []byte {
		b := make([]byte, 4)
		binary.BigEndian.PutUint16(b, uint16(sx))
		binary.BigEndian.PutUint16(b[2:], uint16(sy))
		return b
	}
	hello := serverHello(640, 480, 4)
	cases := []struct {
		name  string
		bytes []byte
		want  string
	}{
		{"a 65535x65535 display", serverHello(65535, 65535, 4), "65535x65535 display"},
		{"a 0x768 display", serverHello(0, 768, 4), "0x768 display"},
		{"a desktop name of 1 GiB", serverHello(640, 480, 1<<30), "desktop name"},
		{"a raw rectangle past the display", cat(hello, rectHeader(0, 0, 65535, 65535, 0)), "outside the 640x480 display"},
		{"a ZRLE rectangle past the display", cat(hello, rectHeader(600, 0, 64, 64, 16, 100)), "outside the 640x480 display"},
		{"4 GiB of ZRLE for 64x64 pixels", cat(hello, rectHeader(0, 0, 64, 64, 16, 0xffffffff)), "ZRLE: 4294967295 compressed bytes"},
		{"a copy from outside the display", cat(hello, rectHeader(0, 0, 64, 64, 1), copyFrom(630, 0)), "at 630,0 outside"},
		{"a desktop resize to 65535x65535", cat(hello, rectHeader(0, 0, 65535, 65535, -223)), "65535x65535 display"},
		{"1 GiB of clipboard", cat(hello, cutText), "clipboard"},
		{"no RFB server", []byte("HTTP/1.1 200 OK\r\n"), "not an RFB server"},
	}
	for _, c := range cases {
		var outcome string
		eval(fmt.Sprintf(`outcome(%q, 1000)`, b64(c.bytes)), &outcome)
		assert.True(t, strings.HasPrefix(outcome, "error: "), "%s: %s", c.name, outcome)
		assert.Contains(t, outcome, c.want, c.name)
	}
	// A well-behaved server's hello alone leaves the client waiting for its first update.
	var outcome string
	eval(fmt.Sprintf(`outcome(%q, 300)`, b64(hello)), &outcome)
	assert.Equal(t, "still waiting", outcome)
}

// zrleStream is one zlib stream for a connection, flushed to a byte boundary after each
// rectangle (a sync flush), as QEMU writes it.
type zrleStream struct {
	buf bytes.Buffer
	w   *zlib.Writer
}

func newZRLEStream() *zrleStream {
	s := &zrleStream{}
	s.w = zlib.NewWriter(&s.buf)
	return s
}

// rect is a ZRLE rectangle's header and data: tiles deflated on the stream.
func (s *zrleStream) rect(t *testing.T, x, y, w, h int, tiles []byte) []byte {
	s.buf.Reset()
	_, err := s.w.Write(tiles)
	require.NoError(t, err)
	require.NoError(t, s.w.Flush())
	header := make([]byte, 16)
	binary.BigEndian.PutUint16(header[0:], uint16(x))
	binary.BigEndian.PutUint16(header[2:], uint16(y))
	binary.BigEndian.PutUint16(header[4:], uint16(w))
	binary.BigEndian.PutUint16(header[6:], uint16(h))
	binary.BigEndian.PutUint32(header[8:], 16)
	binary.BigEndian.PutUint32(header[12:], uint32(s.buf.Len()))
	return cat(header, s.buf.Bytes())
}

func update(rects ...[]byte) []byte {
	return cat(append([][]byte{{0, 0, 0, byte(len(rects))}}, rects...)...)
}

func TestZRLEFullScreenOfTheLargestDisplay(t *testing.T) {
	eval := rfbPage(t)
	// 4K UHD, at most what maxPixels allows: one ZRLE rectangle of solid tiles.
	const w, h = 3840, 2160
	var solid []byte
	for i := 0; i < ((w+63)/64)*((h+63)/64); i++ {
		solid = append(solid, cat([]byte{1}, blue)...)
	}
	s := newZRLEStream()
	data := cat(serverHello(w, h, 4), []byte{0, 0, 0, 1}, s.rect(t, 0, 0, w, h, solid))
	var got struct {
		Outcome string
		Drawn   []int
	}
	eval(fmt.Sprintf(`(async () => {
		let drawn = null, updated;
		const done = new Promise((r) => { updated = r; });
		const rfb = new RFB(() => {}, { resize() {}, raw(x, y, w, h) { drawn = [w, h]; }, copy() {}, updated() { updated("updated"); } });
		rfb.receive(bytes(%q));
		const outcome = await Promise.race([done, rfb.done.then(() => "ended", (err) => err.message),
			new Promise((r) => setTimeout(() => r("no update"), 10000))]);
		rfb.close();
		return {outcome, drawn};
	})()`, b64(data)), &got)
	assert.Equal(t, "updated", got.Outcome)
	assert.Equal(t, []int{w, h}, got.Drawn)
}

// TestZRLEStreamAcrossRectangles: one zlib stream across rectangles and updates, fed byte by
// byte (the decoder must not care how the network cuts the stream), and what the client asks
// the server for.
func TestZRLEStreamAcrossRectangles(t *testing.T) {
	eval := rfbPage(t)
	s := newZRLEStream()
	// 70×2: two tiles across (64 and 6 wide); then a second update with one more rectangle.
	first := update(s.rect(t, 0, 0, 70, 2, cat([]byte{1}, red, []byte{1}, green)), s.rect(t, 0, 2, 1, 1, cat([]byte{0}, blue)))
	second := update(s.rect(t, 5, 0, 1, 1, cat([]byte{1}, white)))
	all := cat(serverHello(70, 3, 4), first)

	var got struct {
		Updates int
		Sent    string
		Rects   []struct {
			X, Y, W, H int
			RGBA       []int
		}
		Stats struct {
			Bytes int
			Rects map[string]int
		}
	}
	eval(fmt.Sprintf(`(async () => {
		const sent = [], rects = [];
		let updates = 0, resolveUpdate;
		const rfb = new RFB((b) => sent.push(...b), {
			resize() {},
			raw(x, y, w, h, rgba) { rects.push({x, y, w, h, rgba: Array.from(rgba)}); },
			copy() {},
			updated() { updates++; resolveUpdate(); },
		});
		let waiting = new Promise((r) => { resolveUpdate = r; });
		for (const b of bytes(%q)) rfb.receive(Uint8Array.of(b));
		await waiting;
		waiting = new Promise((r) => { resolveUpdate = r; });
		rfb.receive(bytes(%q));
		await waiting;
		rfb.close();
		await rfb.done.catch(() => {});
		return {updates, sent: btoa(String.fromCharCode(...sent)), rects, stats: rfb.stats};
	})()`, b64(all), b64(second)), &got)

	assert.Equal(t, 2, got.Updates)
	sent, err := base64.StdEncoding.DecodeString(got.Sent)
	require.NoError(t, err)
	// After the version (12), the security type (1), ClientInit (1) and SetPixelFormat (20):
	encodings := sent[12+1+1+20:]
	assert.Equal(t, []byte{2, 0, 0, 4}, encodings[:4], "SetEncodings with 4 encodings")
	assert.Equal(t, int32(16), int32(binary.BigEndian.Uint32(encodings[4:])), "ZRLE first")
	require.Len(t, got.Rects, 3)
	px := func(r int, i int) []byte {
		p := got.Rects[r].RGBA[i*4 : i*4+3]
		return []byte{byte(p[0]), byte(p[1]), byte(p[2])}
	}
	assert.Equal(t, []int{70, 2}, []int{got.Rects[0].W, got.Rects[0].H})
	assert.Equal(t, red, px(0, 0))
	assert.Equal(t, red, px(0, 63))
	assert.Equal(t, green, px(0, 64), "the second tile starts at x=64")
	assert.Equal(t, green, px(0, 70+69))
	assert.Equal(t, blue, px(1, 0))
	assert.Equal(t, white, px(2, 0), "the zlib stream goes on in the next update")
	assert.Equal(t, 3, got.Stats.Rects["16"])
	assert.Equal(t, len(all)+len(second), got.Stats.Bytes)
}

// TestKeysyms: what keys the page sends as X11 keysyms.
func TestKeysyms(t *testing.T) {
	eval := rfbPage(t)
	var got map[string]int
	eval(`({a: keysymFor({key: "a", code: "KeyA"}), Enter: keysymFor({key: "Enter", code: "Enter"}),
		F5: keysymFor({key: "F5", code: "F5"}), ShiftLeft: keysymFor({key: "Shift", code: "ShiftLeft"}),
		euro: keysymFor({key: "€", code: "KeyE"}), dead: keysymFor({key: "Dead", code: "BracketLeft"})})`, &got)
	assert.Equal(t, map[string]int{"a": 0x61, "Enter": 0xff0d, "F5": 0xffc2, "ShiftLeft": 0xffe1, "euro": 0x010020ac, "dead": 0}, got)
}
