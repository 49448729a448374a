// Package app is virt-launcher's command line: its flags (Options), the mode they choose
// and running it. The launcher has two jobs: run one instance's guest (its pod's) or probe
// QEMU's capabilities once per node (virt-handler's init container).
package app

import (
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/hangarvm/hangar/pkg/launcher"
	"github.com/hangarvm/hangar/pkg/launcherpod/layout"
)

// Mode is what a virt-launcher process does.
type Mode string

const (
	// ModeGuest runs one instance's guest until it is gone: the launcher pod's job.
	ModeGuest Mode = "guest"
	// ModeQEMUCapabilities has a private libvirtd probe QEMU, writes libvirt's capabilities
	// file to QEMUCapabilitiesFile and exits: virt-handler's init container's job, chosen
	// by --write-qemu-capabilities.
	ModeQEMUCapabilities Mode = "qemu-capabilities"
	// ModeFollowConsoleLog copies the guest's console log to standard output as it grows,
	// until SIGTERM: the launcher pod's guest-console-log container, chosen by
	// --follow-console-log.
	ModeFollowConsoleLog Mode = "follow-console-log"
)

// Options are virt-launcher's flags. Those of the instance default to the environment the
// launcher pod sets (layout.Env*), the directories to the pod's layout.
type Options struct {
	// Launcher configures the guest's launcher (pkg/launcher); --state-dir is its
	// LibvirtStateDir, the probe's too. Run adds the libvirtd socket and the pod network.
	Launcher launcher.Config
	// QEMUCapabilitiesFile, when set, is where ModeQEMUCapabilities writes its probe.
	QEMUCapabilitiesFile string
	// ConsoleLogFile, when set, is the console log ModeFollowConsoleLog follows.
	ConsoleLogFile string
	// Mode is set by Complete.
	Mode Mode
}

// NewOptions returns virt-launcher's options with their defaults, read from the environment
// where the launcher pod sets one.
func NewOptions() *Options {
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	emulation, _ := strconv.ParseBool(env(layout.EnvEmulation, "false"))
	return &Options{Launcher: launcher.Config{
		Namespace:         env(layout.EnvNamespace, ""),
		Name:              env(layout.EnvName, ""),
		UID:               env(layout.EnvUID, ""),
		SocketDir:         env(layout.EnvSocketDir, layout.SocketMountPath),
		LibvirtStateDir:   layout.StateDir,
		RunDir:            layout.RunDir,
		EphemeralDir:      layout.EphemeralMountPath,
		UseEmulation:      emulation,
		ContainerDiskRoot: layout.ContainerDiskMountPath,
		KernelBootRoot:    layout.KernelBootMountPath,
		SecretsDir:        layout.SecretsDir,
		FinalWait:         30 * time.Second,
	}}
}

// AddFlags adds the flags to a flag set.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	c := &o.Launcher
	fs.StringVar(&c.Namespace, "namespace", c.Namespace, "instance namespace ($HANGAR_VMI_NAMESPACE)")
	fs.StringVar(&c.Name, "name", c.Name, "instance name ($HANGAR_VMI_NAME)")
	fs.StringVar(&c.UID, "uid", c.UID, "instance UID ($HANGAR_VMI_UID)")
	fs.StringVar(&c.SocketDir, "socket-dir", c.SocketDir, "directory shared with virt-handler ($HANGAR_SOCKET_DIR)")
	fs.StringVar(&c.LibvirtStateDir, "state-dir", c.LibvirtStateDir, "private directory of libvirtd and QEMU (libvirt's session directories)")
	fs.StringVar(&c.RunDir, "run-dir", c.RunDir, "private directory for QEMU's serial socket, cloud-init ISOs and the console log")
	fs.StringVar(&c.EphemeralDir, "ephemeral-dir", c.EphemeralDir, "directory of the guest's ephemeral disks (containerDisk overlays, empty disks)")
	fs.BoolVar(&c.UseEmulation, "use-emulation", c.UseEmulation, "run the guest under TCG instead of KVM ($HANGAR_USE_EMULATION)")
	fs.StringVar(&c.ContainerDiskRoot, "container-disk-root", c.ContainerDiskRoot, "per containerDisk volume, <dir>/<volume> holds the image's files")
	fs.StringVar(&c.KernelBootRoot, "kernel-boot-root", c.KernelBootRoot, "the files of the kernelBoot image")
	fs.StringVar(&c.SecretsDir, "secrets-dir", c.SecretsDir, "per Secret the cloud-init volumes name, <dir>/<secret> holds its keys (the pod's secret volumes)")
	fs.StringVar(&c.VMStateDir, "vm-state-dir", c.VMStateDir, "where the VM's state claim is mounted (persistent EFI variables and TPM state); none when empty")
	fs.DurationVar(&c.FinalWait, "final-wait", c.FinalWait, "how long the final state waits for virt-handler before the launcher exits")
	fs.StringVar(&o.QEMUCapabilitiesFile, "write-qemu-capabilities", o.QEMUCapabilitiesFile,
		"instead of running a guest, write libvirt's capabilities of QEMU to this file and exit (virt-handler's init container)")
	fs.StringVar(&o.ConsoleLogFile, "follow-console-log", o.ConsoleLogFile,
		"instead of running a guest, copy this console log to standard output as the guest writes it, until SIGTERM (the guest-console-log container)")
}

// Complete chooses the mode: the probe when --write-qemu-capabilities names a file, the
// console log's follower when --follow-console-log does, else the guest.
func (o *Options) Complete() error {
	o.Mode = ModeGuest
	switch {
	case o.QEMUCapabilitiesFile != "" && o.ConsoleLogFile != "":
		return errors.New("--write-qemu-capabilities and --follow-console-log are two jobs: choose one")
	case o.QEMUCapabilitiesFile != "":
		o.Mode = ModeQEMUCapabilities
	case o.ConsoleLogFile != "":
		o.Mode = ModeFollowConsoleLog
	}
	return nil
}

// Validate checks the options of the mode. A guest needs its instance and refuses to run as
// root; the probe needs nothing (it logs what keeps it from probing and exits, so that
// virt-handler starts either way).
func (o *Options) Validate() error {
	if o.Mode != ModeGuest {
		return nil
	}
	var errs []error
	if c := o.Launcher; c.Namespace == "" || c.Name == "" || c.UID == "" {
		errs = append(errs, errors.New("namespace, name and uid are required"))
	}
	if os.Geteuid() == 0 {
		// Root in the container would be root on the node one escape away, and libvirtd would
		// run its privileged system instance. The launcher pod runs as an unprivileged user.
		errs = append(errs, errors.New("refusing to run as root; run it as an unprivileged user (the launcher pod sets runAsUser)"))
	}
	return errors.Join(errs...)
}
