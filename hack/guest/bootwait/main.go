// Command bootwait measures how long a guest takes to print its ready banner
// on a serial console, and checks that the console answers a typed command.
//
// It is the measuring half of Hangar's boot benchmarks: hack/guest/boot-bench.sh
// runs it around bare QEMU, and a later benchmark can run it against a Hangar
// VMI's console socket, so both measure the same thing the same way.
//
// The clock starts when bootwait starts the command given after "--" (or
// when bootwait itself starts, without a command) and stops when a console
// line contains the banner. The console is one of:
//
//	-stdio          the command's stdin/stdout (qemu -nographic)
//	-listen PATH    a unix socket bootwait listens on before starting the
//	                command; QEMU connects as a client (-serial unix:PATH),
//	                so no output can be lost
//	-connect PATH   a unix socket someone else listens on (QEMU
//	                server=on,wait=off, libvirt <serial type='unix'
//	                mode='bind'>); dialled until it accepts. Output written
//	                before the dial is lost: start the guest paused and
//	                resume it with -after-attach.
//
// On success it prints one line, for example
//
//	banner=2.051s roundtrip=0.184s shell=1.210s attempts=2
//
// banner: start to the ready line; roundtrip: from typing the command that
// got answered to its answer; shell: from the banner to the first answer
// (includes commands typed before a shell was reading); attempts: how many
// times the command was typed.
//
// and exits 0; on failure it prints the reason on stderr and exits 1.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type options struct {
	stdio            bool
	listenPath       string
	connectPath      string
	banner           string
	timeout          time.Duration
	roundTrip        bool
	roundTripTimeout time.Duration
	retype           time.Duration
	afterAttach      string
	logPath          string
	keep             bool
	command          []string
}

func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bootwait", flag.ContinueOnError)
	fs.BoolVar(&o.stdio, "stdio", false, "the command's stdin/stdout is the console")
	fs.StringVar(&o.listenPath, "listen", "", "listen on this unix socket; the guest's serial connects to it")
	fs.StringVar(&o.connectPath, "connect", "", "dial this unix socket (retrying until it accepts)")
	fs.StringVar(&o.banner, "banner", "HANGAR-GUEST-READY", "text of the ready line")
	fs.DurationVar(&o.timeout, "timeout", 120*time.Second, "how long to wait for the banner")
	fs.BoolVar(&o.roundTrip, "roundtrip", true, "after the banner, type a command and wait for its answer")
	fs.DurationVar(&o.roundTripTimeout, "roundtrip-timeout", 30*time.Second, "how long to wait for the typed command's answer")
	fs.DurationVar(&o.retype, "retype", time.Second, "type the command again when no answer came within this time (a getty starting up flushes its input)")
	fs.StringVar(&o.afterAttach, "after-attach", "", "shell command to run once the console is attached (e.g. virsh resume)")
	fs.StringVar(&o.logPath, "log", "", "write everything read from the console to this file")
	fs.BoolVar(&o.keep, "keep", false, "leave the command running at the end instead of stopping it")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bootwait (-stdio | -listen PATH | -connect PATH) [flags] [-- command args...]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.command = fs.Args()

	sources := 0
	for _, set := range []bool{o.stdio, o.listenPath != "", o.connectPath != ""} {
		if set {
			sources++
		}
	}
	switch {
	case sources != 1:
		return o, errors.New("choose exactly one of -stdio, -listen, -connect")
	case o.stdio && len(o.command) == 0:
		return o, errors.New("-stdio needs a command after --")
	case o.listenPath != "" && len(o.command) == 0:
		return o, errors.New("-listen needs a command after -- (the guest that connects)")
	}
	return o, nil
}

// result is what one measured boot yields.
type result struct {
	banner    time.Duration
	roundTrip roundTripResult
}

func main() {
	opts, err := parseOptions(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "bootwait:", err)
		os.Exit(2)
	}
	res, err := run(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bootwait:", err)
		os.Exit(1)
	}
	if opts.roundTrip {
		fmt.Printf("banner=%.3fs roundtrip=%.3fs shell=%.3fs attempts=%d\n", res.banner.Seconds(),
			res.roundTrip.latency.Seconds(), res.roundTrip.untilAnswer.Seconds(), res.roundTrip.attempts)
	} else {
		fmt.Printf("banner=%.3fs\n", res.banner.Seconds())
	}
}

func run(opts options) (result, error) {
	var res result
	start := time.Now()
	deadline := start.Add(opts.timeout)

	var listener net.Listener
	if opts.listenPath != "" {
		// Listen before the guest starts, so its first byte finds us.
		_ = os.Remove(opts.listenPath)
		l, err := net.Listen("unix", opts.listenPath)
		if err != nil {
			return res, fmt.Errorf("listen on %s: %w", opts.listenPath, err)
		}
		defer os.Remove(opts.listenPath)
		defer l.Close()
		listener = l
	}

	var guest *guestProcess
	var stdioConsole io.ReadWriteCloser
	if len(opts.command) > 0 {
		start = time.Now()
		deadline = start.Add(opts.timeout)
		g, console, err := startCommand(opts.command, opts.stdio)
		if err != nil {
			return res, err
		}
		guest = g
		stdioConsole = console
		if !opts.keep {
			defer guest.stop()
			stopOnSignal(guest)
		}
	}

	console, err := attachConsole(opts, listener, stdioConsole, guest, deadline)
	if err != nil {
		return res, err
	}
	defer console.Close()

	var logFile io.Writer = io.Discard
	if opts.logPath != "" {
		f, err := os.Create(opts.logPath)
		if err != nil {
			return res, fmt.Errorf("create console log: %w", err)
		}
		defer f.Close()
		logFile = f
	}
	lines := readLines(io.TeeReader(console, logFile))

	if opts.afterAttach != "" {
		out, err := exec.Command("/bin/sh", "-c", opts.afterAttach).CombinedOutput()
		if err != nil {
			return res, fmt.Errorf("after-attach command %q: %w: %s", opts.afterAttach, err, strings.TrimSpace(string(out)))
		}
	}

	if _, err := waitForLine(lines, guest, deadline, func(line string) bool {
		return strings.Contains(line, opts.banner)
	}); err != nil {
		return res, fmt.Errorf("waiting for banner %q: %w", opts.banner, err)
	}
	res.banner = time.Since(start)

	if opts.roundTrip {
		rt, err := checkRoundTrip(console, lines, guest, opts.roundTripTimeout, opts.retype)
		if err != nil {
			return res, err
		}
		res.roundTrip = rt
	}
	return res, nil
}

// guestProcess is the command bootwait started, and what became of it.
type guestProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

func startCommand(argv []string, stdio bool) (*guestProcess, io.ReadWriteCloser, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	// Its own process group, so stopping it also stops what it spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var console io.ReadWriteCloser
	if stdio {
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, err
		}
		console = &pipeConsole{Reader: stdout, WriteCloser: stdin}
	} else {
		cmd.Stdout = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	g := &guestProcess{cmd: cmd, exited: make(chan struct{})}
	go func() {
		g.err = cmd.Wait()
		close(g.exited)
	}()
	return g, console, nil
}

// stop ends the command: SIGTERM to its process group, SIGKILL if it is
// still there after a grace period.
func (g *guestProcess) stop() {
	select {
	case <-g.exited:
		return
	default:
	}
	pgid := -g.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-g.exited
	}
}

// failed reports a command that has already exited with an error. A command
// that exits cleanly (virsh start) is not a failure: the guest lives on.
func (g *guestProcess) failed() error {
	if g == nil {
		return nil
	}
	select {
	case <-g.exited:
		if g.err != nil {
			return fmt.Errorf("command exited: %w", g.err)
		}
	default:
	}
	return nil
}

// stopOnSignal stops the guest when bootwait is interrupted: the guest runs
// in its own process group, so a signal to ours would not reach it.
func stopOnSignal(guest *guestProcess) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-signals
		guest.stop()
		fmt.Fprintf(os.Stderr, "bootwait: stopped by %v\n", sig)
		os.Exit(1)
	}()
}

type pipeConsole struct {
	io.Reader
	io.WriteCloser
}

func attachConsole(opts options, listener net.Listener, stdioConsole io.ReadWriteCloser, guest *guestProcess, deadline time.Time) (io.ReadWriteCloser, error) {
	switch {
	case opts.stdio:
		return stdioConsole, nil
	case listener != nil:
		return acceptBefore(listener, guest, deadline)
	default:
		return dialUntil(opts.connectPath, guest, deadline)
	}
}

func acceptBefore(listener net.Listener, guest *guestProcess, deadline time.Time) (net.Conn, error) {
	type accepted struct {
		conn net.Conn
		err  error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := listener.Accept()
		ch <- accepted{c, err}
	}()
	var exited <-chan struct{}
	if guest != nil {
		exited = guest.exited
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, fmt.Errorf("accept console connection: %w", a.err)
		}
		return a.conn, nil
	case <-exited:
		return nil, fmt.Errorf("command exited before connecting to the console socket: %v", guest.err)
	case <-time.After(time.Until(deadline)):
		return nil, errors.New("timed out waiting for the guest to connect to the console socket")
	}
}

// dialUntil dials path every few milliseconds: the socket appears only once
// QEMU has started, and every millisecond of delay loses console output.
func dialUntil(path string, guest *guestProcess, deadline time.Time) (net.Conn, error) {
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		conn, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
		cancel()
		if err == nil {
			return conn, nil
		}
		lastErr = err
		if err := guest.failed(); err != nil {
			return nil, err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil, fmt.Errorf("timed out dialling console socket %s: %v", path, lastErr)
}

// readLines splits the console into lines. Carriage returns and the escape
// sequences a shell prints are left in; matchers use substrings.
func readLines(r io.Reader) <-chan string {
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		reader := bufio.NewReaderSize(r, 64*1024)
		for {
			line, err := reader.ReadString('\n')
			if line != "" {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

var errConsoleClosed = errors.New("console closed")

func waitForLine(lines <-chan string, guest *guestProcess, deadline time.Time, match func(string) bool) (string, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var exited <-chan struct{}
	if guest != nil {
		exited = guest.exited
	}
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return "", errConsoleClosed
			}
			if match(line) {
				return line, nil
			}
		case <-exited:
			if err := guest.failed(); err != nil {
				return "", err
			}
			exited = nil // exited cleanly: keep reading the console
		case <-timer.C:
			return "", errors.New("timed out")
		}
	}
}

type roundTripResult struct {
	latency     time.Duration // typing the answered command -> its answer
	untilAnswer time.Duration // first typing -> first answer
	attempts    int
}

// checkRoundTrip types "echo hangar-$((A+B))" and waits for the line
// "hangar-<sum>". The terminal echoes the typed line back, but that copy
// holds the expression, not the sum, so only the shell's answer matches.
// Input typed before the shell is ready can be lost (a getty flushes it),
// so it is typed again every retype interval, each time with other numbers:
// the answer then tells which attempt it belongs to.
func checkRoundTrip(console io.Writer, lines <-chan string, guest *guestProcess, timeout, retype time.Duration) (roundTripResult, error) {
	var res roundTripResult
	typedAt := map[string]time.Time{}
	start := time.Now()
	deadline := start.Add(timeout)
	for time.Now().Before(deadline) {
		a, b := 1000+rand.IntN(90000), 1000+rand.IntN(90000)
		want := fmt.Sprintf("hangar-%d", a+b)
		if _, err := fmt.Fprintf(console, "echo hangar-$((%d+%d))\n", a, b); err != nil {
			return res, fmt.Errorf("type on console: %w", err)
		}
		typedAt[want] = time.Now()
		res.attempts++

		attemptDeadline := time.Now().Add(retype)
		if attemptDeadline.After(deadline) {
			attemptDeadline = deadline
		}
		line, err := waitForLine(lines, guest, attemptDeadline, func(line string) bool {
			_, ok := typedAt[strings.TrimSpace(stripEscapes(line))]
			return ok
		})
		if err == nil {
			now := time.Now()
			res.latency = now.Sub(typedAt[strings.TrimSpace(stripEscapes(line))])
			res.untilAnswer = now.Sub(start)
			return res, nil
		}
		if errors.Is(err, errConsoleClosed) || guest.failed() != nil {
			return res, fmt.Errorf("console round trip: %w", err)
		}
	}
	return res, fmt.Errorf("console round trip: no answer within %s to %d typed commands", timeout, res.attempts)
}

// stripEscapes removes ANSI CSI sequences (ESC [ ... final byte), which
// busybox's shell sends to query the terminal size.
func stripEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
