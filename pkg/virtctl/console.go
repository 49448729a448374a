package virtctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// escapeByte is Ctrl+], which ends a console session, as in telnet and KubeVirt's virtctl.
const escapeByte = 0x1d

func newConsoleCommand(c *cliContext) *cobra.Command {
	timeout := minutesOrDuration(5 * time.Minute)
	cmd := &cobra.Command{
		Use:   "console VMI",
		Short: "Connect to the serial console of a virtual machine",
		Long: "Connect to the serial console of a virtual machine. Ctrl+] ends the session. While the\n" +
			"instance is starting, virtctl waits for it (--timeout, in minutes as KubeVirt's, or a\n" +
			"duration such as 90s) and says so; a refusal (not found, forbidden) ends it at once.\n" +
			"A lost connection is re-established.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(vmisResource),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.console(cmd.Context(), args[0], time.Duration(timeout))
		},
	}
	cmd.Flags().Var(&timeout, "timeout", "how long to wait for the instance to start: minutes (5), or a duration (90s)")
	return cmd
}

var errEscaped = errors.New("escape sequence")

// console runs a console session until the user escapes or no connection can be made.
func (c *cliContext) console(ctx context.Context, name string, timeout time.Duration) error {
	if f, ok := c.streams.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		state, err := term.MakeRaw(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("raw terminal: %w", err)
		}
		defer term.Restore(int(f.Fd()), state)
	}
	input, escaped := readInput(c.streams.In)
	for {
		ws, err := c.openStreamWaiting(ctx, name, "console", timeout, escaped)
		if errors.Is(err, errEscaped) {
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(c.streams.ErrOut, "Successfully connected to %s console. The escape sequence is ^]\r\n", name)
		err = pump(ws, input, escaped, c.streams.Out)
		ws.Close()
		if errors.Is(err, errEscaped) {
			fmt.Fprint(c.streams.ErrOut, "\r\n")
			return nil
		}
		fmt.Fprintf(c.streams.ErrOut, "\r\nConnection to %s lost (%v); reconnecting...\r\n", name, err)
	}
}

// readInput reads the user's keystrokes; escaped closes at Ctrl+] or at the end of input.
func readInput(in io.Reader) (<-chan []byte, <-chan struct{}) {
	input := make(chan []byte)
	escaped := make(chan struct{})
	go func() {
		defer close(escaped)
		buf := make([]byte, 1024)
		for {
			n, err := in.Read(buf)
			for i := 0; i < n; i++ {
				if buf[i] == escapeByte {
					if i > 0 {
						input <- append([]byte(nil), buf[:i]...)
					}
					return
				}
			}
			if n > 0 {
				input <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	return input, escaped
}

// pump copies keystrokes to the guest and the guest's output to out until the user escapes
// (errEscaped) or the connection ends (its error).
func pump(ws *gwebsocket.Conn, input <-chan []byte, escaped <-chan struct{}, out io.Writer) error {
	lost := make(chan error, 1)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				lost <- err
				return
			}
			if _, err := out.Write(data); err != nil {
				lost <- err
				return
			}
		}
	}()
	for {
		select {
		case keys := <-input:
			if err := ws.WriteMessage(gwebsocket.BinaryMessage, keys); err != nil {
				return err
			}
		case <-escaped:
			_ = ws.WriteControl(gwebsocket.CloseMessage,
				gwebsocket.FormatCloseMessage(gwebsocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			return errEscaped
		case err := <-lost:
			return err
		}
	}
}
