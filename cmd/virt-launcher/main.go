// virt-launcher runs one VirtualMachineInstance's guest inside its launcher pod: a private
// libvirtd, the domain, and the command socket virt-handler drives it through. It exits when
// the guest is gone; SIGTERM shuts the guest down within its grace period first.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/launcher"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
	"github.com/hangarvm/hangar/pkg/launcher/network"
	"github.com/hangarvm/hangar/pkg/launcher/virt"
)

func main() {
	if runAsInit() {
		return
	}
	klog.InitFlags(nil)
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	emulation, _ := strconv.ParseBool(env("HANGAR_USE_EMULATION", "false"))
	var cfg launcher.Config
	var libvirtRoot string
	var setupNetwork bool
	flag.StringVar(&cfg.Namespace, "namespace", env("HANGAR_VMI_NAMESPACE", ""), "instance namespace ($HANGAR_VMI_NAMESPACE)")
	flag.StringVar(&cfg.Name, "name", env("HANGAR_VMI_NAME", ""), "instance name ($HANGAR_VMI_NAME)")
	flag.StringVar(&cfg.UID, "uid", env("HANGAR_VMI_UID", ""), "instance UID ($HANGAR_VMI_UID)")
	flag.StringVar(&cfg.SocketDir, "socket-dir", env("HANGAR_SOCKET_DIR", "/var/run/hangar/sockets"), "directory shared with virt-handler ($HANGAR_SOCKET_DIR)")
	flag.StringVar(&cfg.RunDir, "run-dir", "/var/run/hangar/launcher", "private directory for QEMU's sockets and the guest's ephemeral disks")
	flag.BoolVar(&cfg.UseEmulation, "use-emulation", emulation, "run the guest under TCG instead of KVM ($HANGAR_USE_EMULATION)")
	flag.StringVar(&cfg.ContainerDiskRoot, "container-disk-root", "/var/run/hangar/container-disks", "per containerDisk volume, <dir>/<volume> holds the image's files")
	flag.StringVar(&cfg.KernelBootRoot, "kernel-boot-root", "/var/run/hangar/kernel-boot", "the files of the kernelBoot image")
	flag.StringVar(&cfg.SecretsDir, "secrets-dir", "/var/run/hangar/secrets", "per Secret the cloud-init volumes name, <dir>/<secret> holds its keys (the pod's secret volumes)")
	flag.DurationVar(&cfg.FinalWait, "final-wait", 30*time.Second, "how long the final state waits for virt-handler before the launcher exits")
	flag.StringVar(&libvirtRoot, "libvirt-root", "", "keep libvirtd's directories under this one, in a private mount namespace (development and tests)")
	flag.BoolVar(&setupNetwork, "setup-network", false, "set up the pod side of the guest's interfaces itself (needs CAP_NET_ADMIN); otherwise virt-handler does")
	flag.Parse()

	if cfg.Namespace == "" || cfg.Name == "" || cfg.UID == "" {
		fmt.Fprintln(os.Stderr, "virt-launcher: namespace, name and uid are required")
		os.Exit(2)
	}
	podNetwork := &network.PodNetwork{SetupPod: setupNetwork}
	cfg.Network = podNetwork
	err := run(cfg, libvirtRoot)
	podNetwork.Close()
	if err != nil {
		klog.ErrorS(err, "virt-launcher")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(cfg launcher.Config, libvirtRoot string) error {
	for _, d := range []string{cfg.SocketDir, cfg.RunDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	startCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	daemon, err := libvirtd.Start(startCtx, libvirtd.Config{PrivateRoot: libvirtRoot, Output: os.Stderr})
	if err != nil {
		return err
	}
	defer daemon.Stop(5 * time.Second)
	conn, err := virt.Connect(daemon.URI())
	if err != nil {
		return err
	}
	defer conn.Close()
	klog.InfoS("libvirtd ready", "uri", daemon.URI(), "after", time.Since(t0))

	l := launcher.New(cfg, conn)
	defer l.Close()

	ctx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	serveErr := make(chan error, 1)
	go func() { serveErr <- l.Serve(ctx) }()
	klog.InfoS("serving", "socket", filepath.Join(cfg.SocketDir, "launcher.sock"), "instance", cfg.Namespace+"/"+cfg.Name, "uid", cfg.UID)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	stop := make(chan struct{})
	go func() {
		s := <-signals
		klog.InfoS("signal; shutting the guest down", "signal", s)
		close(stop)
	}()

	runCtx, cancelRun := context.WithCancel(context.Background())
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
