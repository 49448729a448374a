package browser

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/hangarvm/hangar/pkg/virtctl/vncweb"
)

//go:embed rfbcheck.html
var rfbCheckPage []byte

// RFBSeen is what the page's RFB client saw of a VNC server (rfbcheck.html).
type RFBSeen struct {
	Width, Height, Covered, Updates int
	Name                            string
	Opaque, Open                    bool
	FirstScreenBytes, WatchedBytes  int
	Rects                           map[string]int
	Keysyms                         map[string]int
	// Frame is the screen after the first update, RGBA.
	Frame []byte `json:"-"`
}

// RFBCheck runs the page's RFB client (vncweb's rfb.js) in Chromium against the VNC server
// on the unix socket sock, through a websocket as virtctl's page reaches the API: it asks for
// encodings (the client's default when empty), reads the first screen, sends a key and a
// pointer event, watches updates for watch more, and reports what it saw.
func RFBCheck(t testing.TB, sock string, encodings []string, watch time.Duration) RFBSeen {
	t.Helper()
	ctx := New(t)
	mux := http.NewServeMux()
	mux.Handle("/rfb.js", http.FileServer(http.FS(vncweb.Files())))
	mux.HandleFunc("/check.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(rfbCheckPage)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&gwebsocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		vnc, err := net.Dial("unix", sock)
		if err != nil {
			return
		}
		defer vnc.Close()
		relay(ws, vnc)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	query := url.Values{"watch": {strconv.Itoa(int(watch.Seconds()))}}
	if len(encodings) > 0 {
		query.Set("encodings", strings.Join(encodings, ","))
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/check.html?"+query.Encode())))
	// The result as JSON, decoded here with encoding/json (its names match case-insensitively).
	raw, err := chromedp.Run(ctx, chromedp.Poll[[]byte](`window.result`,
		chromedp.WithPollingTimeout(20*time.Second+watch), chromedp.WithPollingInterval(100*time.Millisecond)))
	require.NoError(t, err, "the RFB client's result")
	var result struct {
		RFBSeen
		Frame string
		Error string
	}
	require.NoError(t, json.Unmarshal(raw, &result), "%.500s", raw)
	require.Empty(t, result.Error, "the RFB client failed")
	seen := result.RFBSeen
	seen.Frame, err = base64.StdEncoding.DecodeString(result.Frame)
	require.NoError(t, err)
	return seen
}

// relay copies a websocket's binary messages to conn and conn's bytes back as messages, until
// either side ends.
func relay(ws *gwebsocket.Conn, conn net.Conn) {
	go func() {
		defer conn.Close()
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if _, err := conn.Write(data); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 && ws.WriteMessage(gwebsocket.BinaryMessage, buf[:n]) != nil {
			return
		}
		if err != nil {
			return
		}
	}
}
