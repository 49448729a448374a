package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
	"github.com/hangarvm/hangar/pkg/launcher/domain"
	"github.com/hangarvm/hangar/pkg/launcher/libvirtd"
)

// What a guest keeps across restarts of its VM lives on the VM's state claim, mounted at
// Config.VMStateDir, in KubeVirt's layout (its backend storage's subdirectories):
//
//	nvram/<vmi>_VARS.fd   the EFI variables (efi.persistent)
//	swtpm/<uuid>/         the TPM's state (tpm.persistent), per domain UUID, which a VM's
//	                      firmware UUID keeps stable
//	swtpm-localca/        the local CA that signed the TPM's endorsement key certificate
//
// libvirt keeps the TPM's state below its session's configuration directory and has no
// setting for it, so the launcher links those two directories to the claim before the
// domain starts. Everything else stays in the launcher's private, ephemeral directory.
const (
	stateNVRAM   = "nvram"
	stateTPM     = "swtpm"
	stateLocalCA = "swtpm-localca"
)

// prepareState makes the directories of the guest's EFI variables and TPM state, on the
// state claim when they persist, and points the layout's NVRAM there.
func prepareState(vmi *v1.VirtualMachineInstance, cfg *Config, opts *domain.Options) error {
	spec := &vmi.Spec
	if spec.NeedsStateClaim() && cfg.VMStateDir == "" {
		return errors.New("the instance keeps EFI variables or TPM state across restarts, and its launcher pod has no state volume")
	}
	if spec.EFI() != nil {
		if spec.PersistentEFI() {
			opts.Layout.NVRAMDir = filepath.Join(cfg.VMStateDir, stateNVRAM)
		}
		if err := os.MkdirAll(opts.Layout.NVRAMDir, 0o700); err != nil {
			return fmt.Errorf("EFI variables: %w", err)
		}
	}
	if !spec.PersistentTPM() {
		return nil
	}
	if cfg.LibvirtStateDir == "" {
		return errors.New("persistent TPM: the launcher does not know libvirtd's session directory")
	}
	config := libvirtd.Env(cfg.LibvirtStateDir)["XDG_CONFIG_HOME"]
	for dir, link := range map[string]string{
		stateTPM:     filepath.Join(config, "libvirt", "qemu", "swtpm"),
		stateLocalCA: filepath.Join(config, "var", "lib", "swtpm-localca"),
	} {
		if err := linkState(filepath.Join(cfg.VMStateDir, dir), link); err != nil {
			return fmt.Errorf("persistent TPM: %w", err)
		}
	}
	return nil
}

// linkState makes target a directory and link a symbolic link to it, replacing an empty
// directory or an older link there.
func linkState(target, link string) error {
	if err := os.MkdirAll(target, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(link); err == nil {
		if fi.Mode()&os.ModeSymlink != 0 {
			if dest, _ := os.Readlink(link); dest == target {
				return nil
			}
		}
		// A directory libvirt made before (empty: no TPM ran yet) or a stale link.
		if err := os.Remove(link); err != nil {
			return fmt.Errorf("replace %s with a link to the state claim: %w", link, err)
		}
	}
	return os.Symlink(target, link)
}
