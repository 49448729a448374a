package app

import (
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
)

// writeQEMUCapabilities is the launcher's other job, run by virt-handler's init container
// from the same root file system as the launchers: have a private libvirtd probe QEMU and
// write its capabilities file to out, for virt-handler to seed each launcher's cache with
// (pkg/launcher/libvirtd/capabilities.go). A failure is logged, not fatal: without the file
// the launchers probe QEMU themselves, as before, and virt-handler must start either way.
func writeQEMUCapabilities(stateDir, out string) {
	if os.Geteuid() == 0 {
		// As root, libvirtd would be its privileged system instance, and the file would not
		// be what the launchers' unprivileged libvirtd trusts.
		klog.ErrorS(nil, "refusing to probe QEMU as root; run as the launchers' user")
		return
	}
	start := time.Now()
	if err := probeQEMU(stateDir, out); err != nil {
		klog.ErrorS(err, "QEMU capabilities not written; launchers will probe QEMU themselves")
		return
	}
	klog.InfoS("QEMU capabilities written", "file", out, "after", time.Since(start))
}

func probeQEMU(stateDir, out string) error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	daemon, conn, err := startLibvirtd(stateDir)
	if err != nil {
		return err
	}
	defer daemon.Stop(5 * time.Second)
	defer conn.Close()
	if err := conn.ProbeQEMU(domain.DefaultEmulator); err != nil {
		return fmt.Errorf("probe %s: %w", domain.DefaultEmulator, err)
	}
	data, err := os.ReadFile(libvirtd.CapabilitiesFile(stateDir, domain.DefaultEmulator))
	if err != nil {
		return err
	}
	if err := libvirtd.CheckCapabilities(data, domain.DefaultEmulator); err != nil {
		return err
	}
	// Whole or not at all: virt-handler may read it any time.
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
