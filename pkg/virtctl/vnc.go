package virtctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/spf13/cobra"

	"github.com/hangarvm/hangar/pkg/virtctl/vncweb"
)

func newVNCCommand(c *cliContext) *cobra.Command {
	var proxyOnly, browser bool
	var port int
	var address string
	cmd := &cobra.Command{
		Use:   "vnc VMI",
		Short: "Open the VNC display of a virtual machine",
		Long: "Serve the VNC display of a virtual machine on a local port and start a VNC viewer\n" +
			"(remote-viewer or vncviewer) on it; with --proxy-only, print the port as JSON and serve\n" +
			"until interrupted, for a viewer of your choice; with --browser, serve a viewer page\n" +
			"for a web browser instead and open it (or print its address).",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(vmisResource),
		RunE: func(cmd *cobra.Command, args []string) error {
			if browser {
				return c.vncBrowser(cmd.Context(), args[0], address, port)
			}
			return c.vnc(cmd.Context(), args[0], address, port, proxyOnly)
		},
	}
	cmd.AddCommand(newScreenshotCommand(c))
	cmd.Flags().BoolVar(&proxyOnly, "proxy-only", false, "only serve the local port, print it as JSON")
	cmd.Flags().BoolVar(&browser, "browser", false, "serve a viewer page for a web browser")
	cmd.MarkFlagsMutuallyExclusive("proxy-only", "browser")
	cmd.Flags().IntVar(&port, "port", 0, "local port (0 picks a free one)")
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "local address to listen on")
	return cmd
}

func newScreenshotCommand(c *cliContext) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:               "screenshot VMI --file FILE.png",
		ValidArgsFunction: c.completeNames(vmisResource),
		Short:             "Save one frame of the VNC display as a PNG",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, acts, ns, err := c.clients()
			if err != nil {
				return err
			}
			png, err := acts.client.Get().AbsPath("/apis", subresourcesGV.String(), "namespaces", ns,
				"virtualmachineinstances", args[0], "vnc", "screenshot").DoRaw(cmd.Context())
			if err != nil {
				return fmt.Errorf("screenshot of %s: %w", args[0], err)
			}
			return os.WriteFile(file, png, 0o644)
		},
	}
	cmd.Flags().StringVar(&file, "file", "screenshot.png", "where to write the PNG")
	return cmd
}

// vncWait is how long vnc waits for a starting instance before it serves a port.
const vncWait = 5 * time.Minute

// checkVNC opens the instance's VNC stream once, waiting while it starts: a refusal (not
// found, forbidden) ends virtctl at once instead of each viewer's connection later.
func (c *cliContext) checkVNC(ctx context.Context, name string) error {
	ws, err := c.openStreamWaiting(ctx, name, "vnc", vncWait, nil)
	if err != nil {
		return err
	}
	return ws.Close()
}

func (c *cliContext) vnc(ctx context.Context, name, address string, port int, proxyOnly bool) error {
	cfg, ns, err := c.target()
	if err != nil {
		return err
	}
	if err := c.checkVNC(ctx, name); err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer l.Close()
	port = l.Addr().(*net.TCPAddr).Port

	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				ws, err := openStream(ctx, cfg, ns, name, "vnc")
				if err != nil {
					fmt.Fprintln(c.streams.ErrOut, err)
					return
				}
				defer ws.Close()
				bridge(ws, conn)
			}()
		}
	}()

	if proxyOnly {
		out, _ := json.Marshal(map[string]int{"port": port})
		fmt.Fprintln(c.streams.Out, string(out))
		<-ctx.Done()
		return nil
	}
	target := fmt.Sprintf("vnc://%s:%d", address, port)
	for _, viewer := range [][]string{{"remote-viewer", target}, {"vncviewer", fmt.Sprintf("%s::%d", address, port)}} {
		if path, err := exec.LookPath(viewer[0]); err == nil {
			return exec.CommandContext(ctx, path, viewer[1:]...).Run()
		}
	}
	fmt.Fprintf(c.streams.Out, "No VNC viewer found; point yours at %s:%d (Ctrl+C to stop)\n", address, port)
	<-ctx.Done()
	return nil
}

// vncBrowser serves the browser viewer (vncweb) on a local port until interrupted.
func (c *cliContext) vncBrowser(ctx context.Context, name, address string, port int) error {
	cfg, ns, err := c.target()
	if err != nil {
		return err
	}
	if err := c.checkVNC(ctx, name); err != nil {
		return err
	}
	token, err := vncweb.NewToken()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: vncweb.Handler(token, func(ctx context.Context) (*gwebsocket.Conn, error) {
			return openStream(ctx, cfg, ns, name, "vnc")
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	page := fmt.Sprintf("http://%s/%s/", l.Addr(), token)
	fmt.Fprintf(c.streams.Out, "VNC of %s/%s in the browser: %s (Ctrl+C to stop)\n", ns, name, page)
	if opener, err := exec.LookPath("xdg-open"); err == nil {
		_ = exec.Command(opener, page).Start()
	}
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// bridge copies bytes between a websocket and a TCP connection until either ends.
func bridge(ws *gwebsocket.Conn, conn net.Conn) {
	var once sync.Once
	done := make(chan struct{})
	stop := func() { once.Do(func() { close(done) }) }
	go func() {
		defer stop()
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
	go func() {
		defer stop()
		buf := make([]byte, 32<<10)
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				if werr := ws.WriteMessage(gwebsocket.BinaryMessage, buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					return
				}
				return
			}
		}
	}()
	<-done
}
