package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/launcher"
	"github.com/hangarvm/hangar/pkg/launcher/consolelog"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
)

// Run does the mode's job. A guest runs until it is gone; SIGTERM and SIGINT shut it down
// within its grace period first. The probe's failures are logged, not returned.
func (o *Options) Run(ctx context.Context) error {
	switch o.Mode {
	case ModeQEMUCapabilities:
		writeQEMUCapabilities(o.Launcher.LibvirtStateDir, o.QEMUCapabilitiesFile)
		return nil
	case ModeFollowConsoleLog:
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return consolelog.Follow(ctx, o.ConsoleLogFile, os.Stdout, 250*time.Millisecond)
	case ModeGuest:
		cfg := o.Launcher
		podNetwork := &launcher.PodNetwork{}
		cfg.Network = podNetwork
		defer podNetwork.Close()
		return runGuest(ctx, cfg)
	}
	return fmt.Errorf("unknown mode %q", o.Mode)
}

// runGuest runs the guest with a private libvirtd and serves its command socket.
func runGuest(ctx context.Context, cfg launcher.Config) error {
	stateDir := cfg.LibvirtStateDir
	cfg.LibvirtSocket = libvirtd.Socket(stateDir)
	for _, d := range []string{cfg.SocketDir, cfg.RunDir, cfg.EphemeralDir, stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	t0 := time.Now()
	daemon, conn, err := startLibvirtd(stateDir)
	if err != nil {
		return err
	}
	defer daemon.Stop(5 * time.Second)
	defer conn.Close()
	klog.InfoS("libvirtd ready", "uri", daemon.URI(), "after", time.Since(t0))

	l := launcher.New(cfg, conn)
	defer l.Close()

	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	serveErr := make(chan error, 1)
	go func() { serveErr <- l.Serve(serveCtx) }()
	klog.InfoS("serving", "socket", filepath.Join(cfg.SocketDir, "launcher.sock"), "instance", cfg.Namespace+"/"+cfg.Name, "uid", cfg.UID)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	stop := make(chan struct{})
	go func() {
		s := <-signals
		klog.InfoS("signal; shutting the guest down", "signal", s)
		close(stop)
	}()

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	go func() {
		select {
		case err := <-serveErr:
			if err != nil {
				klog.ErrorS(err, "command socket")
				cancelRun()
			}
		case <-daemon.Exited():
			klog.InfoS("libvirtd exited")
		}
	}()
	err = l.Run(runCtx, stop)
	klog.InfoS("guest gone; exiting", "state", l.State())
	return err
}

// startLibvirtd starts the private libvirtd of the session below stateDir and connects to it.
func startLibvirtd(stateDir string) (*libvirtd.Daemon, *virt.Conn, error) {
	// The launcher is libvirtd's client: both must see the same session directories. QEMU's
	// and libvirt's temporary files go there too (the root file system is read-only).
	for k, v := range libvirtd.Env(stateDir) {
		if err := os.Setenv(k, v); err != nil {
			return nil, nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	daemon, err := libvirtd.Start(ctx, libvirtd.Config{StateDir: stateDir, Output: os.Stderr})
	if err != nil {
		return nil, nil, err
	}
	conn, err := virt.Connect(daemon.URI())
	if err != nil {
		_ = daemon.Stop(5 * time.Second)
		return nil, nil, err
	}
	return daemon, conn, nil
}
