// Package browser drives Debian's Chromium, headless, over the Chrome DevTools Protocol from Go
// (github.com/chromedp/chromedp): virtctl's VNC page for the node and e2e tests, and the page's
// RFB client against a VNC server (rfbcheck.go). No Node.js: Chromium is the only JavaScript
// runtime the tests use, the one the page is written for.
//
// Chromium is a test-only package (hack/install-browser.sh). Where it is missing, a browser
// test skips, unless HANGAR_REQUIRE_BROWSER is set, as hack/test.sh sets it: there a missing
// browser fails the test instead of hiding it.
package browser

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// RequireEnv, when set, turns a missing Chromium from a skip into a failure.
const RequireEnv = "HANGAR_REQUIRE_BROWSER"

// Chromium returns the browser to drive: $CHROMIUM, else Debian's /usr/bin/chromium. It skips
// the test when there is none (fails it under HANGAR_REQUIRE_BROWSER).
func Chromium(t testing.TB) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("no browser at %s (%v): install Debian's chromium (hack/install-browser.sh)", path, err)
		}
		t.Skipf("no browser at %s: install Debian's chromium (hack/install-browser.sh) to run this test", path)
	}
	return path
}

// New starts a headless Chromium and returns a context for chromedp's actions on one tab of
// it; the browser ends with the test. What the page logs, and its uncaught errors, go to the
// test's log.
func New(t testing.TB) context.Context {
	t.Helper()
	bin := Chromium(t)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Headless,
		// Tests run as root on the project's machines, where Chromium's sandbox cannot start.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser now, so that a browser that cannot start fails here, and so that the
	// event subscriptions below have a tab.
	require.NoError(t, chromedp.Do(ctx), "start %s", bin)
	logs := chromedp.Events(ctx, cdpruntime.ConsoleAPICalled)
	errs := chromedp.Events(ctx, cdpruntime.ExceptionThrown)
	go func() {
		for ev, err := range logs {
			if err != nil {
				return
			}
			var args []string
			for _, a := range ev.Args {
				args = append(args, strings.Trim(string(a.Value), `"`))
			}
			logf(t, "page: %s", strings.Join(args, " "))
		}
	}()
	go func() {
		for ev, err := range errs {
			if err != nil {
				return
			}
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			logf(t, "page error: %s", msg)
		}
	}()
	return ctx
}

// logf logs unless the test has ended (the page may log while the browser closes).
func logf(t testing.TB, format string, args ...any) {
	defer func() { _ = recover() }()
	t.Logf(format, args...)
}

// VNCPage is virtctl's VNC page (pkg/virtctl/vncweb) open in Chromium.
type VNCPage struct {
	t      testing.TB
	ctx    context.Context
	Width  int
	Height int
	Status string
}

// StartVNCPage starts Chromium and opens the page at url: it returns once the page has drawn
// the first framebuffer update. Chromium ends with the test.
func StartVNCPage(t testing.TB, url string) *VNCPage {
	t.Helper()
	p := &VNCPage{t: t, ctx: New(t)}
	require.NoError(t, chromedp.Do(p.ctx, chromedp.Navigate(url)))
	// The page counts the framebuffer updates it has drawn on the canvas.
	_, err := chromedp.Run(p.ctx, chromedp.Poll[bool](`Number(document.getElementById("screen").dataset.updates || 0) >= 1`,
		chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		status, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
		require.NoError(t, err, "the page draws the guest's screen (the page says %q)", status)
	}
	raw, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]byte](`(() => { const c = document.getElementById("screen");
		return {width: c.width, height: c.height, status: document.getElementById("status").textContent}; })()`))
	require.NoError(t, err)
	var opened struct {
		Width, Height int
		Status        string
	}
	require.NoError(t, json.Unmarshal(raw, &opened))
	p.Width, p.Height, p.Status = opened.Width, opened.Height, opened.Status
	return p
}

// Screen is what the canvas shows now.
func (p *VNCPage) Screen() image.Image {
	p.t.Helper()
	url, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.getElementById("screen").toDataURL("image/png")`))
	require.NoError(p.t, err)
	data, err := base64.StdEncoding.DecodeString(url[strings.IndexByte(url, ',')+1:])
	require.NoError(p.t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(p.t, err)
	return img
}

// Type types text on the page's screen as a person would ("\n" is Enter): the screen is
// clicked first, and a character typed with Shift on a US keyboard comes with Shift pressed
// around it, so that the page sends Shift_L and QEMU picks the shifted scancode.
func (p *VNCPage) Type(text string) {
	p.t.Helper()
	require.NoError(p.t, chromedp.Do(p.ctx, chromedp.Click(chromedp.ID("screen"))))
	for _, r := range text {
		require.NoError(p.t, chromedp.Do(p.ctx, typeRune(r)), "type %q", r)
		time.Sleep(15 * time.Millisecond) // a fast typist; QEMU queues keys it gets faster
	}
}

// shiftKey is the left Shift key's press and release.
func shiftKey(kind input.DispatchKeyEventType) input.DispatchKeyEventParams {
	return input.DispatchKeyEventParams{Type: kind, Key: "Shift", Code: "ShiftLeft", WindowsVirtualKeyCode: 16,
		NativeVirtualKeyCode: 16, Location: 1, Modifiers: 8}
}

// typeRune presses and releases the key of r (chromedp's US layout, kb), with Shift pressed
// and released around the characters that need it, as a person does.
func typeRune(r rune) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		events := kb.Encode(r)
		if k, ok := kb.Keys[r]; ok && k.Shift {
			release := shiftKey(input.DispatchKeyEventTypeKeyUp)
			release.Modifiers = 0
			events = append(append([]*input.DispatchKeyEventParams{ptr(shiftKey(input.DispatchKeyEventTypeRawKeyDown))}, events...), &release)
		}
		for _, ev := range events {
			if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, *ev); err != nil {
				return err
			}
		}
		return nil
	})
}

func ptr[T any](v T) *T { return &v }

// CtrlAltDel clicks the page's Ctrl+Alt+Del button.
func (p *VNCPage) CtrlAltDel() {
	p.t.Helper()
	require.NoError(p.t, chromedp.Do(p.ctx, chromedp.Click(chromedp.ID("cad"))))
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
