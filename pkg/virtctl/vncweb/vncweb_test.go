package vncweb

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const greeting = "RFB 003.008\n"

// upstream stands in for the API's VNC stream: it greets as QEMU does, then echoes.
func upstream(t *testing.T) DialFunc {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&gwebsocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		if conn.WriteMessage(gwebsocket.BinaryMessage, []byte(greeting)) != nil {
			return
		}
		for {
			kind, data, err := conn.ReadMessage()
			if err != nil || conn.WriteMessage(kind, data) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return func(ctx context.Context) (*gwebsocket.Conn, error) {
		conn, _, err := gwebsocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		return conn, err
	}
}

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

func TestPage(t *testing.T) {
	srv := httptest.NewServer(Handler("secret", upstream(t)))
	defer srv.Close()

	tests := []struct {
		path     string
		code     int
		typ      string
		contains string
	}{
		{"/secret/", http.StatusOK, "text/html", `<script src="rfb.js">`},
		{"/secret/rfb.js", http.StatusOK, "javascript", "class RFB"},
		{"/", http.StatusNotFound, "", ""},
		{"/guess/", http.StatusNotFound, "", ""},
		{"/guess/rfb.js", http.StatusNotFound, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, typ, body := get(t, srv.URL+tt.path)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, typ, tt.typ)
			assert.Contains(t, body, tt.contains)
		})
	}
}

func TestWebsocket(t *testing.T) {
	srv := httptest.NewServer(Handler("secret", upstream(t)))
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/secret/websocket"

	t.Run("relays both ways", func(t *testing.T) {
		conn, _, err := gwebsocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {srv.URL}})
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, data, err := conn.ReadMessage()
		require.NoError(t, err)
		assert.Equal(t, greeting, string(data))
		require.NoError(t, conn.WriteMessage(gwebsocket.BinaryMessage, []byte("RFB 003.008\n")))
		_, data, err = conn.ReadMessage()
		require.NoError(t, err)
		assert.Equal(t, "RFB 003.008\n", string(data))
	})

	t.Run("refuses another site's page", func(t *testing.T) {
		_, resp, err := gwebsocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {"http://evil.example"}})
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})

	t.Run("refuses a wrong token", func(t *testing.T) {
		_, resp, err := gwebsocket.DefaultDialer.Dial(strings.Replace(wsURL, "secret", "guess", 1), nil)
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func TestUpstreamRefusalIsAnHTTPError(t *testing.T) {
	srv := httptest.NewServer(Handler("secret", func(context.Context) (*gwebsocket.Conn, error) {
		return nil, errors.New(`virtualmachineinstances.kubevirt.io "demo" not found`)
	}))
	defer srv.Close()
	_, resp, err := gwebsocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/secret/websocket", nil)
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(body), "not found")
}
