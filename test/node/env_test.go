//go:build libvirt

package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

type env struct {
	root           string // the repository
	outDir         string // _output/node-test: logs, figures, libvirt's state
	launcher       string
	kernelBootRoot string
}

var (
	envOnce sync.Once
	envVal  env
	envErr  error
)

// testEnv builds virt-launcher once and finds the test guest.
func testEnv(t *testing.T) env {
	t.Helper()
	envOnce.Do(func() {
		if os.Geteuid() != 0 {
			envErr = fmt.Errorf("node tests need root")
			return
		}
		wd, err := os.Getwd()
		if err != nil {
			envErr = err
			return
		}
		root := filepath.Join(wd, "..", "..")
		e := env{root: root, outDir: filepath.Join(root, "_output", "node-test")}
		e.kernelBootRoot = filepath.Join(root, "_output", "guest", "kernelboot-rootfs")
		if _, err := os.Stat(filepath.Join(e.kernelBootRoot, "boot", "vmlinux")); err != nil {
			envErr = fmt.Errorf("no test guest (run hack/guest/build-kernelboot.sh): %w", err)
			return
		}
		if err := os.MkdirAll(e.outDir, 0o755); err != nil {
			envErr = err
			return
		}
		e.launcher = filepath.Join(e.outDir, "virt-launcher")
		cmd := exec.Command("go", "build", "-o", e.launcher, "./cmd/virt-launcher")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			envErr = fmt.Errorf("build virt-launcher: %v: %s", err, out)
			return
		}
		envVal = e
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	return envVal
}

// writeFigure appends a measured duration to _output/node-test/figures.txt.
func writeFigure(t *testing.T, name string, d time.Duration) {
	f, err := os.OpenFile(filepath.Join(testEnv(t).outDir, "figures.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s %.3f\n", time.Now().Format(time.RFC3339), name, d.Seconds())
}
