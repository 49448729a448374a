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
	"github.com/hangarvm/hangar/pkg/launcher/virt"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
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
	emulation, _ := strconv.ParseBool(env(layout.EnvEmulation, "false"))
	var cfg launcher.Config
	var stateDir string
	flag.StringVar(&cfg.Namespace, "namespace", env(layout.EnvNamespace, ""), "instance namespace ($HANGAR_VMI_NAMESPACE)")
	flag.StringVar(&cfg.Name, "name", env(layout.EnvName, ""), "instance name ($HANGAR_VMI_NAME)")
	flag.StringVar(&cfg.UID, "uid", env(layout.EnvUID, ""), "instance UID ($HANGAR_VMI_UID)")
	flag.StringVar(&cfg.SocketDir, "socket-dir", env(layout.EnvSocketDir, layout.SocketMountPath), "directory shared with virt-handler ($HANGAR_SOCKET_DIR)")
	flag.StringVar(&stateDir, "state-dir", layout.StateDir, "private directory of libvirtd and QEMU (libvirt's session directories)")
	flag.StringVar(&cfg.RunDir, "run-dir", layout.RunDir, "private directory for QEMU's serial socket, cloud-init ISOs and the console log")
	flag.StringVar(&cfg.EphemeralDir, "ephemeral-dir", layout.EphemeralMountPath, "directory of the guest's ephemeral disks (containerDisk overlays, empty disks)")
	flag.BoolVar(&cfg.UseEmulation, "use-emulation", emulation, "run the guest under TCG instead of KVM ($HANGAR_USE_EMULATION)")
	flag.StringVar(&cfg.ContainerDiskRoot, "container-disk-root", layout.ContainerDiskMountPath, "per containerDisk volume, <dir>/<volume> holds the image's files")
	flag.StringVar(&cfg.KernelBootRoot, "kernel-boot-root", layout.KernelBootMountPath, "the files of the kernelBoot image")
	flag.StringVar(&cfg.SecretsDir, "secrets-dir", layout.SecretsDir, "per Secret the cloud-init volumes name, <dir>/<secret> holds its keys (the pod's secret volumes)")
	flag.StringVar(&cfg.VMStateDir, "vm-state-dir", "", "where the VM's state claim is mounted (persistent EFI variables and TPM state); none when empty")
	flag.DurationVar(&cfg.FinalWait, "final-wait", 30*time.Second, "how long the final state waits for virt-handler before the launcher exits")
	capabilitiesOut := flag.String("write-qemu-capabilities", "",
		"instead of running a guest, write libvirt's capabilities of QEMU to this file and exit (virt-handler's init container)")
	flag.Parse()

	if *capabilitiesOut != "" {
		writeQEMUCapabilities(stateDir, *capabilitiesOut)
		klog.Flush()
		return
	}
	cfg.LibvirtStateDir = stateDir
	if cfg.Namespace == "" || cfg.Name == "" || cfg.UID == "" {
		fmt.Fprintln(os.Stderr, "virt-launcher: namespace, name and uid are required")
		os.Exit(2)
	}
	if os.Geteuid() == 0 {
		// Root in the container would be root on the node one escape away, and libvirtd would
		// run its privileged system instance. The launcher pod runs as an unprivileged user.
		fmt.Fprintln(os.Stderr, "virt-launcher: refusing to run as root; run it as an unprivileged user (the launcher pod sets runAsUser)")
		os.Exit(2)
	}
	podNetwork := &launcher.PodNetwork{}
	cfg.Network = podNetwork
	err := run(cfg, stateDir)
	podNetwork.Close()
	if err != nil {
		klog.ErrorS(err, "virt-launcher")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(cfg launcher.Config, stateDir string) error {
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
