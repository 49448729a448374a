package app

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// childEnv marks the launcher process that the init shim started.
const childEnv = "HANGAR_LAUNCHER_CHILD"

// runAsInit makes a launcher that is its container's PID 1 an init: orphans are reparented
// to PID 1, and libvirt daemonizes QEMU (for capability probes as for guests), so an exited
// QEMU would stay a zombie that libvirt waits on for tens of seconds before it gives up
// ("Failed to terminate process ... Device or resource busy"). The shim runs the launcher as
// its child, forwards SIGTERM and SIGINT to it, reaps every process, and exits with the
// launcher's status. It returns false when this process is not PID 1 (or is the child).
//
// virt-controller's launcher pods share their PID namespace, so their pause container is PID 1
// and reaps; the shim serves a launcher started as PID 1 elsewhere (a pod an older
// virt-controller built, a runtime run by hand).
func runAsInit() bool {
	if os.Getpid() != 1 || os.Getenv(childEnv) != "" {
		return false
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	child := exec.Command("/proc/self/exe", os.Args[1:]...)
	child.Env = append(os.Environ(), childEnv+"=1")
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "virt-launcher init: start launcher: %v\n", err)
		os.Exit(1)
	}
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			_ = child.Process.Signal(sig)
			continue
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			if pid == child.Process.Pid {
				switch {
				case status.Exited():
					os.Exit(status.ExitStatus())
				case status.Signaled():
					os.Exit(128 + int(status.Signal()))
				}
				os.Exit(1)
			}
		}
	}
	return true
}
