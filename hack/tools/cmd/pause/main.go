// Command pause is the sandbox ("infra") container of every pod: it holds the
// pod's namespaces open and does nothing else. Built as a static binary and
// packed into an image locally, because the cluster cannot pull registry.k8s.io/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		switch sig {
		case syscall.SIGCHLD:
			// With a shared PID namespace pause is PID 1 and inherits orphans:
			// reap them so they do not stay zombies.
			reapChildren()
		default:
			os.Exit(0)
		}
	}
}

func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
