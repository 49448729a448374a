// Package vncweb serves a VNC viewer for the browser: a page with a small RFB client
// (static/rfb.js: ZRLE, inflated by the browser's DecompressionStream, so a text screen
// crosses kube-apiserver and virt-api compressed) and a websocket that virtctl bridges to the
// instance's VNC stream on the API. It listens on the user's machine only; a random token in
// every path and an Origin check keep other local users' pages and other sites from using
// the user's credentials.
//
// The page is embedded in virtctl, which is one binary that `go build` makes from a clone.
// noVNC, the usual browser client, would have to be fetched from npm at build time to stay
// out of the repository, and go:embed cannot embed what a fresh clone lacks: the client
// stays virtctl's own.
package vncweb

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"k8s.io/klog/v2"
)

//go:embed static
var static embed.FS

// DialFunc opens the instance's VNC stream on the API.
type DialFunc func(ctx context.Context) (*gwebsocket.Conn, error)

// NewToken returns a random path token.
func NewToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Files are the page's files (index.html, rfb.js): the tests run its RFB client alone in a
// browser.
func Files() fs.FS {
	files, _ := fs.Sub(static, "static")
	return files
}

// Handler serves the page under /<token>/ and its websocket at /<token>/websocket; each
// websocket gets a stream of its own from dial.
func Handler(token string, dial DialFunc) http.Handler {
	files := Files()
	prefix := "/" + token + "/"
	upgrader := gwebsocket.Upgrader{CheckOrigin: sameOrigin}
	mux := http.NewServeMux()
	mux.Handle(prefix, http.StripPrefix(prefix, http.FileServer(http.FS(files))))
	mux.HandleFunc(prefix+"websocket", func(w http.ResponseWriter, r *http.Request) {
		// Open the API stream first, so a refusal (no such instance, RBAC) is an HTTP error
		// the page can show instead of a socket that closes at once.
		upstream, err := dial(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer upstream.Close()
		browser, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader has answered
		}
		defer browser.Close()
		bridge(browser, upstream)
	})
	return mux
}

// sameOrigin accepts a websocket only from the page itself (or from a client that sends no
// Origin, which no browser page can be).
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// bridge relays messages both ways until either side closes, then closes the other side
// with a normal close frame.
func bridge(a, b *gwebsocket.Conn) {
	var once sync.Once
	done := make(chan struct{})
	relay := func(from, to *gwebsocket.Conn) {
		defer once.Do(func() { close(done) })
		for {
			kind, data, err := from.ReadMessage()
			if err != nil {
				klog.V(2).InfoS("VNC stream ended", "err", err)
				return
			}
			if err := to.WriteMessage(kind, data); err != nil {
				return
			}
		}
	}
	go relay(a, b)
	go relay(b, a)
	<-done
	closing := gwebsocket.FormatCloseMessage(gwebsocket.CloseNormalClosure, "")
	deadline := time.Now().Add(time.Second)
	_ = a.WriteControl(gwebsocket.CloseMessage, closing, deadline)
	_ = b.WriteControl(gwebsocket.CloseMessage, closing, deadline)
}
